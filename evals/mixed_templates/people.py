"""User sessions, English and Chinese: family, health, moves, jobs, events, identifiers."""

from __future__ import annotations

from evals.mixed_builder import MONTHS, Builder, day_en, day_zh, month_en, month_zh
from evals.mixed_builder import split_pool as _l


def person_en(b: Builder) -> None:
    """An English-speaking user (the plan's name and possessive pronoun): family, health, moves, jobs, events."""
    n, p = b.plan.person
    sister = b.one(_l("Nora|Ines|Maya|Clara|Greta|Lena"))
    dog, sister_dog, other_dog = b.pick("Miso|Pepper|Biscuit|Juno|Toffee|Mango|Olive", 3)
    b.fact("fact", [f"{n}'s younger sister is called {sister}.", f"Family: {n} has one sibling, a sister named "
                    f"{sister}.", f"{n} mentioned that {p} sister {sister} is coming to stay for a week."],
           [f"What is the name of {n}'s sister?", f"Who is {n}'s sister?"], sister)
    b.fact("fact", [f"{n} adopted a beagle called {dog} from the shelter.", f"{n}'s dog {dog} needs a walk "
                    "before 8am every day."], [f"What is {n}'s dog called?", f"What's the name of {n}'s dog?"], dog)
    b.fact("distractor", [f"{n}'s sister {sister} has a dachshund named {sister_dog}."],
           [f"What is the name of {n}'s sister's dog?"], sister_dog)
    b.add(f"{n}'s neighbour's dog {other_dog} barks whenever the doorbell rings.")
    allergy = b.one(_l("peanuts|shellfish|penicillin|sesame"))
    b.fact("fact", [f"{n} is allergic to {allergy}; keep that in mind when booking restaurants.",
                    f"Health note: {n} reacts badly to {allergy}, so an antihistamine is always in {p} bag."],
           [f"What is {n} allergic to?", f"Does {n} have any allergies?"], allergy)
    coffee = b.one(_l("flat white|oat-milk cortado|double espresso|iced americano"))
    b.fact("fact", [f"{n} always orders a {coffee}, no sugar.", f"Coffee order for {n}: {coffee}."],
           [f"How does {n} take {p} coffee?", f"What coffee does {n} usually order?"], coffee)
    instrument = b.one(_l("cello|bass guitar|piano|trumpet|violin"))
    b.fact("fact", [f"{n} has been taking {instrument} lessons on Thursday evenings.",
                    f"{n} practises the {instrument} for half an hour after work."],
           [f"Which instrument is {n} learning?", f"What instrument does {n} play?"], instrument)
    partner = b.one(_l("Tomás|Yusuf|Hannah|Priya|Daniel|Sofia"))
    b.fact("fact", [f"{n}'s partner {partner} works as an architect.", f"{n} lives with {p} partner, {partner}."],
           [f"What is the name of {n}'s partner?", f"Who is {n}'s partner?"], partner)
    food = b.one(_l("Tasca do Chico|Mamma Rosa|Sakura Ramen|The Green Fork|Casa Lupita"))
    b.fact("fact", [f"{n}'s favourite place for dinner is {food}.",
                    f"When in doubt, book {food}: it is {n}'s favourite restaurant."],
           [f"Which restaurant does {n} like best?"], food)
    birthday = f"{b.rng.randrange(1, 29)} {b.one(MONTHS)}"
    b.fact("fact", [f"{n}'s birthday is on {birthday}.", f"Remember {n}'s birthday: {birthday}."],
           [f"When is {n}'s birthday?"], birthday)
    gp, new_gp, dentist, physio = (f"Dr. {name}" for name in b.pick("Almeida|Fischer|Novak|Rahman|Keller|Costa", 4))
    b.chain([[f"{n}'s GP is {gp} at the health centre on the main square."],  # restated: the old value unnamed
             [f"{n}'s GP is {new_gp} at the clinic by the park.", f"{n} is registered with {new_gp} as GP."]],
            [f"Who is {n}'s GP?", f"Which doctor is {n}'s GP?"], new_gp,
            [f"Who was {n}'s GP before {new_gp}?"], gp)
    b.fact("distractor", [f"{n}'s dentist is {dentist}; appointments are booked online."],
           [f"Who is {n}'s dentist?", f"What is the name of {n}'s dentist?"], dentist)
    b.add(f"{n} sees {physio}, a physiotherapist, about {p} knee.")
    c = b.pick("Berlin|Lisbon|Munich|Amsterdam|Vienna|Copenhagen", 4)
    moves = b.rng.choice([2, 3])
    b.chain([[f"{n} lives in {c[0]}, in a flat near the old town.", f"{n} has been based in {c[0]} for three years."],
             [f"{n} moved from {c[0]} to {c[1]} for a new role.", f"Update: {n} relocated from {c[0]} to {c[1]}."],
             [f"{n} moved again, from {c[1]} to {c[2]}; the flat in {c[1]} is given up.",
              f"Big news: {n} has moved from {c[1]} to {c[2]}."]][:moves],
            [f"Which city does {n} live in now?", f"Where is {n} based at the moment?"], c[moves - 1],
            [f"Where did {n} live before {c[moves - 1]}?", f"Which city was {n} based in before moving to "
             f"{c[moves - 1]}?"], c[moves - 2])
    b.fact("unrelated", [f"{n}'s sister {sister} lives in {c[3]}, close to the university."],
           [f"Where does {n}'s sister live?", f"Which city does {n}'s sister {sister} live in?"], c[3])
    e = b.pick("Northwind|Globex|Initech|Hooli|Contoso|Umbrella Labs", 2)
    b.chain([[f"{n} works as a data analyst at {e[0]}.", f"{n} has been at {e[0]} since 2021, in the analytics team."],
             [f"{n} left {e[0]} and started at {e[1]} on Monday.",
              f"{n} accepted an offer from {e[1]}; the last day at {e[0]} was Friday."]],
            [f"Where does {n} work now?", f"Who is {n}'s current employer?"], e[1],
            [f"Where did {n} work before {e[1]}?", f"Who was {n}'s employer before {e[1]}?"], e[0])
    firm = b.one(_l("Atelier Nord|Studio Lumen|Foster Lane Architects"))
    b.fact("unrelated", [f"{n}'s partner {partner} works at {firm}, an architecture studio."],
           [f"Where does {n}'s partner work?", f"Which firm does {partner} work for?"], firm)
    car = b.pick("Toyota Yaris|VW Golf|Tesla Model 3|Renault Zoe|Fiat 500", 2)
    b.chain([[f"{n} drives a {car[0]}.", f"{n}'s car is an old {car[0]}."],
             [f"{n} sold the {car[0]} and bought a {car[1]}.", f"{n} traded in the {car[0]} for a {car[1]}."]],
            [f"What car does {n} drive now?", f"Which car does {n} have at the moment?"], car[1],
            [f"What car did {n} drive before the {car[1]}?"], car[0])
    gym = b.pick("Monday and Wednesday|Tuesday and Thursday|Wednesday and Saturday|Friday and Sunday", 2)
    b.chain([[f"{n} goes to the gym on {gym[0]} mornings."],
             [f"{n} switched gym days to {gym[1]}.", f"From now on {n} trains on {gym[1]} instead of {gym[0]}."]],
            [f"Which days does {n} go to the gym?", f"When does {n} train at the gym these days?"], gym[1],
            [f"Which days did {n} go to the gym before switching to {gym[1]}?"], gym[0])
    phone = [f"+{b.one(_l('49|351|31|43'))} {b.digits(3)} {b.digits(3)} {b.digits(4)}" for _ in range(2)]
    b.chain([[f"{n}'s mobile number is {phone[0]}."],
             [f"{n} has a new mobile number: {phone[1]} (the old {phone[0]} no longer works)."]],
            [f"What is {n}'s current phone number?", f"Which mobile number should I use for {n}?"], phone[1],
            [f"What was {n}'s old phone number?", f"Which mobile number did {n} have before {phone[1]}?"], phone[0])
    pal, pal_phone = b.one(_l("Omar|Julia|Rui")), f"+{b.one(_l('49|351|31|43'))} {b.digits(3)} {b.digits(3)} {b.digits(4)}"
    b.fact("unrelated", [f"{pal}'s mobile number is {pal_phone}; {n} asked me to keep it."],
           [f"What is {pal}'s phone number?", f"Which mobile number does {pal} have?"], pal_phone)
    race, friend = b.one(_l("Lisbon|Berlin|Porto|Vienna")), b.one(_l("Jonas|Marta|Kofi"))
    events = [([f"{n} ran the {race} half marathon in 1:5{b.digits(1)}.", f"{n} finished the {race} half "
                "marathon, a personal best."], [f"When did {n} run the half marathon?"]),
              ([f"{n} passed the driving test today, on the second attempt."],
               [f"When did {n} pass the driving test?"]),
              ([f"{n} was at {friend}'s wedding in Sintra today."], [f"When did {n} go to {friend}'s wedding?"]),
              ([f"{n} had knee surgery at St. Mary's; recovery will take six weeks."],
               [f"When did {n} have knee surgery?", f"On what date was {n}'s knee operation?"])]
    dated = [b.event(texts, queries, day_en) for texts, queries in events]
    early, late = sorted([b.at(), b.at()])
    older = b.add(f"{n} went to the dentist for a check-up and a cleaning.", early)
    newer = b.add(f"{n} had a filling replaced at the dentist.", late)
    b.ask("temporal", [f"When was {n}'s most recent dentist appointment?"], day_en(late), [newer], [older])
    bands = b.pick("Radiohead|Arctic Monkeys|Rosalía|Massive Attack|Florence + the Machine", 2)
    early, late = b.at(0.0, 0.5), b.at(0.5, 1.0)
    b.add(f"{n} saw {bands[0]} live at the arena.", early)
    gig = b.add(f"{n} went to the {bands[1]} concert with {partner}.", late)
    b.ask("temporal", [f"Which concert did {n} go to in {month_en(late)}?"], bands[1], [gig])
    subject = b.one(_l("Portuguese|photography|pottery|accounting"))
    course = b.add(f"{n} started an evening course in {subject}.")
    first = "the half marathon" if dated[0].occurred_at < course.occurred_at else f"the {subject} course"
    b.ask("temporal", [f"Which came first: {n}'s half marathon or the start of the {subject} course?"], first,
          [dated[0], course])
    member, flyer, tax = f"GM-{b.digits(5)}", f"{b.digits(3)} {b.digits(3)} {b.digits(3)}", f"TX-2024-{b.digits(4)}"
    b.fact("identifier", [f"{n}'s gym membership number is {member}."], [f"What is {n}'s gym membership number?"],
           member)
    b.fact("identifier", [f"{n}'s frequent flyer number is {flyer} (Miles & More)."],
           [f"What is {n}'s frequent flyer number?"], flyer)
    b.fact("identifier", [f"The tax advisor's reference for {n}'s 2024 return is {tax}."],
           [f"What reference number did the tax advisor give {n}?"], tax)


PERSON_EN_FILL = (
    ("{n} had {meal} with {friend} at {place}.", "{n} is reading {book} and likes it so far.",
     "{n} asked for a reminder to {task}.", "{n} said the week was {mood} because of {reason}.",
     "{n} binge-watched {show} over the weekend.", "{n} wants to try {hobby} this year.",
     "{n} recommended {book} to {friend}.", "{n} and {friend} talked about {hobby} for an hour.",
     "{n} needs to {task} before the end of the month.", "{friend} lent {n} a copy of {book}."),
    {"meal": "lunch|dinner|brunch|coffee", "friend": "Sam|Lea|Omar|Julia|Rui|Kate|Ben|Anya",
     "place": "a new Thai place|the harbour café|a ramen bar downtown|the market hall|an Italian trattoria|"
              "a rooftop bar",
     "book": "Project Hail Mary|The Overstory|Klara and the Sun|Piranesi|Educated|Sapiens|Stoner",
     "task": "renew the passport|pay the electricity bill|call the landlord|book a haircut|return the library books|"
             "order printer ink|cancel the streaming trial",
     "mood": "hectic|quiet|exhausting|productive|relaxed",
     "reason": "a deadline at work|a cold|visitors staying over|the heatwave|a long train trip|a broken boiler",
     "show": "Severance|The Bear|Slow Horses|Shogun|a documentary about octopuses|Succession",
     "hobby": "bouldering|sourdough baking|watercolour painting|salsa classes|birdwatching|a pottery course"},
)


def person_zh(b: Builder) -> None:
    """A Chinese-speaking user (the plan's name and pronoun, 她 or 他): the same kinds of facts as ``person_en``."""
    n, p = b.plan.person
    sister = b.one(_l("小雪|小雨|婷婷|佳佳|晓燕"))
    cat, sister_cat, other_cat = b.pick("团子|年糕|橘子|豆豆|布丁|可乐", 3)
    b.fact("fact", [f"{n}的妹妹叫{sister}，在成都读大学。", f"{n}说{p}妹妹{sister}下个月要来住一周。"],
           [f"{n}的妹妹叫什么名字？", f"{n}的妹妹是谁？"], sister)
    b.fact("fact", [f"{n}从救助站领养了一只橘猫，取名{cat}。", f"{n}家的猫叫{cat}，每天早上七点要喂。"],
           [f"{n}的猫叫什么？", f"{n}养的猫叫什么名字？"], cat)
    b.fact("distractor", [f"{n}的妹妹{sister}养了一只英短，叫{sister_cat}。"], [f"{n}妹妹的猫叫什么名字？"], sister_cat)
    b.add(f"{n}邻居家的猫{other_cat}经常跑到{p}家阳台上。")
    allergy = b.one(_l("花生|海鲜|青霉素|芒果"))
    b.fact("fact", [f"{n}对{allergy}过敏，订餐时要注意。", f"健康备注：{n}{allergy}过敏，随身带着抗过敏药。"],
           [f"{n}对什么过敏？", f"{n}有什么过敏的东西吗？"], allergy)
    drink = b.one(_l("茉莉花茶|冰美式|燕麦拿铁|普洱"))
    b.fact("fact", [f"{n}每天下午都要喝一杯{drink}。", f"{n}最喜欢喝{drink}。"], [f"{n}平时喜欢喝什么？"], drink)
    instrument = b.one(_l("古筝|钢琴|二胡|吉他|小提琴"))
    b.fact("fact", [f"{n}每周四晚上去学{instrument}。", f"{n}最近在练{instrument}，每天下班后练半小时。"],
           [f"{n}在学什么乐器？"], instrument)
    partner = b.one(_l("张伟|刘洋|赵敏|孙磊|周婷"))
    b.fact("fact", [f"{n}的爱人{partner}是一名建筑师。", f"{n}和爱人{partner}住在一起。"], [f"{n}的爱人叫什么名字？"],
           partner)
    food = b.one(_l("外婆家|绿茶餐厅|南京大牌档|西贝莜面村|点都德"))
    b.fact("fact", [f"{n}最喜欢去{food}吃饭。", f"不知道去哪吃就订{food}，那是{n}最爱的餐厅。"],
           [f"{n}最喜欢哪家餐厅？"], food)
    birthday = f"{b.rng.randrange(1, 13)}月{b.rng.randrange(1, 29)}日"
    b.fact("fact", [f"{n}的生日是{birthday}。", f"记住：{n}的生日在{birthday}。"], [f"{n}的生日是哪天？"], birthday)
    gp, new_gp, dentist, physio = (f"{name}医生" for name in b.pick("李|王|陈|赵|黄|吴", 4))
    b.chain([[f"{n}的家庭医生是社区医院的{gp}。"],  # restated: the old value unnamed
             [f"{n}的家庭医生是仁和诊所的{new_gp}。", f"{n}在仁和诊所签约了{new_gp}做家庭医生。"]],
            [f"{n}的家庭医生是谁？", f"{n}的家庭医生是哪位？"], new_gp, [f"{n}换成{new_gp}之前的家庭医生是谁？"], gp)
    b.fact("distractor", [f"{n}的牙医是口腔医院的{dentist}，要在网上预约。"], [f"{n}的牙医是哪位？", f"{n}看牙找哪位医生？"],
           dentist)
    b.add(f"{n}因为膝盖的问题在康复科看{physio}。")
    c = b.pick("北京|上海|杭州|深圳|成都|南京", 4)
    moves = b.rng.choice([2, 3])
    b.chain([[f"{n}住在{c[0]}，在公司附近租了一套小公寓。", f"{n}在{c[0]}已经生活三年了。"],
             [f"{n}从{c[0]}搬到了{c[1]}，换了新工作。", f"更新：{n}上个月从{c[0]}搬去了{c[1]}。"],
             [f"{n}又搬家了，从{c[1]}搬到{c[2]}。", f"大消息：{n}已经从{c[1]}搬到{c[2]}了。"]][:moves],
            [f"{n}现在住在哪个城市？", f"{n}目前在哪里生活？"], c[moves - 1],
            [f"{n}搬到{c[moves - 1]}之前住在哪个城市？", f"{n}在搬去{c[moves - 1]}以前住在哪里？"], c[moves - 2])
    b.fact("unrelated", [f"{n}的表哥住在{c[3]}，在一家银行上班。"], [f"{n}的表哥住在哪个城市？"], c[3])
    e = b.pick("星河科技|蓝鲸数据|云帆网络|青松医疗|远航物流", 2)
    b.chain([[f"{n}在{e[0]}做数据分析师。", f"{n}从2021年起就在{e[0]}的数据团队工作。"],
             [f"{n}从{e[0]}离职了，周一开始在{e[1]}上班。", f"{n}接受了{e[1]}的offer，上周五是在{e[0]}的最后一天。"]],
            [f"{n}现在在哪家公司工作？"], e[1], [f"{n}去{e[1]}之前在哪家公司工作？"], e[0])
    firm = b.one(_l("华筑设计院|启明建筑事务所|城建设计院"))
    b.fact("unrelated", [f"{n}的爱人{partner}在{firm}上班。"], [f"{n}的爱人在哪里上班？", f"{partner}在哪家单位工作？"], firm)
    car = b.pick("比亚迪秦|大众朗逸|特斯拉Model 3|丰田卡罗拉|蔚来ET5", 2)
    b.chain([[f"{n}开的是一辆{car[0]}。"], [f"{n}把{car[0]}卖了，换了一辆{car[1]}。"]], [f"{n}现在开什么车？"], car[1],
            [f"{n}换{car[1]}之前开的是什么车？"], car[0])
    gym = b.pick("周一和周三|周二和周四|周三和周六|周五和周日", 2)
    b.chain([[f"{n}每{gym[0]}早上去健身房。"],
             [f"{n}把健身时间改到了{gym[1]}。", f"以后{n}改成{gym[1]}去健身，不再是{gym[0]}了。"]],
            [f"{n}现在哪几天去健身？"], gym[1], [f"{n}改到{gym[1]}之前是哪几天去健身？"], gym[0])
    phone = [f"1{b.one(_l('38|39|58|86'))} {b.digits(4)} {b.digits(4)}" for _ in range(2)]
    b.chain([[f"{n}的手机号是{phone[0]}。"], [f"{n}换了新手机号：{phone[1]}，旧号{phone[0]}已停用。"]],
            [f"{n}现在的手机号是多少？", f"现在应该打哪个号码联系{n}？"], phone[1],
            [f"{n}以前的手机号是多少？", f"{n}换号之前用的是哪个手机号？"], phone[0])
    pal, pal_phone = b.one(_l("小李|老王|大鹏")), f"1{b.one(_l('38|39|58|86'))} {b.digits(4)} {b.digits(4)}"
    b.fact("unrelated", [f"{pal}的手机号是{pal_phone}，{n}让我记一下。"], [f"{pal}的手机号是多少？"], pal_phone)
    race, friend = b.one(_l("北京|上海|杭州|厦门")), b.one(_l("小林|阿杰|美美"))
    events = [([f"{n}跑完了{race}半程马拉松，成绩1小时5{b.digits(1)}分。"], [f"{n}是哪天跑的半程马拉松？"]),
              ([f"{n}今天通过了驾照科目三考试，第二次才过。"], [f"{n}是什么时候考过驾照的？"]),
              ([f"{n}今天去苏州参加了{friend}的婚礼。"], [f"{n}什么时候去参加了{friend}的婚礼？"]),
              ([f"{n}在市第一医院做了膝盖手术，需要休养六周。"], [f"{n}是什么时候做的膝盖手术？"])]
    dated = [b.event(texts, queries, day_zh) for texts, queries in events]
    early, late = sorted([b.at(), b.at()])
    older = b.add(f"{n}去看了牙医，洗牙加检查。", early)
    newer = b.add(f"{n}今天去补了一颗牙。", late)
    b.ask("temporal", [f"{n}最近一次看牙是什么时候？"], day_zh(late), [newer], [older])
    singers = b.pick("周杰伦|五月天|陈奕迅|林俊杰|王菲", 2)
    early, late = b.at(0.0, 0.5), b.at(0.5, 1.0)
    b.add(f"{n}去体育馆看了{singers[0]}的演唱会。", early)
    gig = b.add(f"{n}和{partner}一起去看了{singers[1]}的演唱会。", late)
    b.ask("temporal", [f"{n}在{month_zh(late)}去看了谁的演唱会？"], singers[1], [gig])
    subject = b.one(_l("日语|摄影|茶艺|会计"))
    course = b.add(f"{n}报名了一个{subject}晚班课程，今天第一次上课。")
    first = "半程马拉松" if dated[0].occurred_at < course.occurred_at else f"{subject}课"
    b.ask("temporal", [f"{n}是先跑的半程马拉松，还是先开始上{subject}课？"], first, [dated[0], course])
    member, flyer = f"GM-{b.digits(5)}", f"CA{b.digits(9)}"
    b.fact("identifier", [f"{n}的健身房会员号是{member}。"], [f"{n}的健身房会员号是多少？"], member)
    b.fact("identifier", [f"{n}的国航知音卡号是{flyer}。"], [f"{n}的常旅客卡号是多少？"], flyer)


PERSON_ZH_FILL = (
    ("{n}和{friend}在{place}吃了{meal}。", "{n}最近在看《{book}》，觉得挺有意思。", "{n}让我提醒一下要{task}。",
     "{n}说这周{mood}，因为{reason}。", "{n}周末追了《{show}》。", "{n}今年想试试{hobby}。",
     "{n}把《{book}》推荐给了{friend}。", "{n}和{friend}聊了一个小时的{hobby}。", "{friend}借给{n}一本《{book}》。"),
    {"friend": "小李|阿杰|老王|美美|小周|大鹏",
     "place": "楼下新开的川菜馆|公司附近的咖啡馆|商场里的日料店|老街的面馆|江边的烧烤摊",
     "meal": "午饭|晚饭|早茶|火锅", "book": "三体|活着|围城|人类简史|明朝那些事儿|平凡的世界",
     "task": "交电费|续签租房合同|给妈妈打电话|预约理发|还图书馆的书|买打印机墨盒", "mood": "特别忙|比较轻松|很累|效率很高",
     "reason": "项目要上线|感冒了|家里来了客人|天气太热|出差了好几天", "show": "繁花|漫长的季节|狂飙|去有风的地方|觉醒年代",
     "hobby": "攀岩|烘焙|水彩画|飞盘|陶艺"},
)
