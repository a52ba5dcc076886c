"""Agent sessions: the bilingual support agent and the travel agent."""

from __future__ import annotations

from evals.mixed_builder import Builder, day_en, day_zh
from evals.mixed_builder import split_pool as _l


def support_en(b: Builder) -> None:
    """The support agent's English customers of Atlas: plans, refunds, contacts, support tickets."""
    c = b.pick("Dana Whitfield|Kenji Sato|Maria Gonzalez|Tom Becker|Aisha Khan|Lukas Brandt|Alice Moreau", 7)
    companies = b.pick("Brightline Ltd|Kestrel GmbH|Orchard & Co|Vantage Freight", 2)
    b.fact("fact", [f"{c[0]} prefers to be contacted by email, never by phone."], [f"How does {c[0]} want to be "
                                                                                    "contacted?"], "by email")
    b.fact("fact", [f"{c[1]} is the billing admin for {companies[0]}."], [f"Which company is {c[1]} the billing "
                                                                           "admin for?"], companies[0])
    b.fact("fact", [f"{companies[1]} needs every invoice in German; {c[2]} asked for it twice."],
           [f"Which language does {c[2]}'s company need its invoices in?"], "German")
    b.fact("fact", ["Refund policy: refunds within 30 days of a charge; after that only account credit."],
           ["What is the refund policy?", "Until when can a customer get a refund?"], "within 30 days of a charge")
    b.chain([[f"{c[3]} is on the Starter plan, billed monthly."],
             [f"{c[3]} upgraded from Starter to Business after hitting the invoice limit."]],
            [f"Which plan is {c[3]} on now?"], "Business", [f"Which plan was {c[3]} on before Business?"], "Starter")
    b.fact("unrelated", [f"{c[1]} is on the Enterprise plan, billed yearly."], [f"Which plan is {c[1]} on?"],
           "Enterprise")
    invoice = f"INV-{b.digits(6)}"
    b.chain([[f"{c[4]} asked for a refund of the duplicate charge on {invoice}."],
             [f"The refund for {invoice} is approved and waiting for finance."],
             [f"The refund for {invoice} was paid out; {c[4]} confirmed receipt."]],
            [f"What is the status of {c[4]}'s refund for {invoice}?"], "paid out",
            [f"What was the status of the refund for {invoice} before it was paid out?"], "approved")
    user = c[5].split()[0].lower()
    b.chain([[f"{c[5]}'s billing contact is {user}@kestrel.example."],
             [f"{c[5]} changed the billing contact from {user}@kestrel.example to billing@kestrel.example."]],
            [f"What is {c[5]}'s billing contact email now?"], "billing@kestrel.example",
            [f"What was {c[5]}'s billing contact email before billing@kestrel.example?"], f"{user}@kestrel.example")
    for text, query in [(f"Call with {c[0]}: walked through the CSV import; they will retry tomorrow.",
                         f"When was the call with {c[0]} about the CSV import?"),
                        (f"Escalated {c[1]}'s SSO login problem to the engineering on-call.",
                         f"When was {c[1]}'s SSO problem escalated?")]:
        b.event([text], [query], day_en)
    ticket = b.world["timeout_ticket"]
    b.fact("identifier", [f"{c[6]} reported that the invoice export times out; linked to engineering ticket {ticket}."],
           [f"Which engineering ticket is {c[6]}'s invoice export timeout linked to?"], ticket)
    issues = [("identifier", c[2], "a PDF invoice showing the wrong VAT rate"),
              ("identifier", c[4], "two-factor codes not arriving by SMS"),
              ("distractor", c[0], "the CSV import rejecting semicolon-separated files"),
              ("distractor", c[3], "the CSV import failing on files over 5 MB"),
              ("distractor", c[6], "the CSV import mixing up day and month in dates")]
    for number, (kind, customer, issue) in zip(b.rng.sample(range(5100, 5999), 5), issues, strict=True):
        memory = b.add(f"Opened SUP-{number} for {customer}: {issue}.")
        if kind == "distractor":
            b.ask(kind, [f"Which customer reported {issue}?"], customer, [memory])
        else:
            b.ask(kind, [f"Which support ticket covers {customer}'s issue with {issue}?"], f"SUP-{number}", [memory])
    for customer in c[:2]:
        account = f"ACC-{b.digits(5)}"
        b.fact("identifier", [f"{customer}'s account id is {account}."], [f"What is {customer}'s account id?"], account)


SUPPORT_EN_FILL = (
    ("Answered a question from {c} about {topic}.", "Sent {c} the link to the {guide} guide.",
     "{c} said thanks for the quick reply about {topic}.", "Closed a duplicate request from {c} about {topic}.",
     "{c} asked whether {topic} is on the roadmap.", "Followed up with {c} on {topic}; no reply yet."),
    {"c": "Dana Whitfield|Kenji Sato|Maria Gonzalez|Tom Becker|Aisha Khan|Lukas Brandt|Alice Moreau|Noah Fischer",
     "topic": "recurring invoices|the Xero integration|custom invoice numbering|late-payment reminders|user roles|"
              "the API sandbox|credit notes|bank transfers",
     "guide": "getting started|CSV import|invoice templates|API authentication|team permissions"},
)


def support_zh(b: Builder) -> None:
    """The support agent's Chinese-speaking customers (the same session as ``support_en``)."""
    c = b.pick("刘洋|陈静|黄磊|周敏|吴昊", 3)
    invoice = f"INV-{b.digits(6)}"
    b.chain([[f"客户{c[0]}申请退款，{invoice} 被重复扣费。"], [f"{invoice} 的退款已审批，等待财务打款。"],
             [f"{invoice} 的退款已经打款，{c[0]}确认收到了。"]], [f"{c[0]}的 {invoice} 退款现在是什么状态？"], "已经打款",
            [f"{invoice} 的退款在打款之前是什么状态？"], "已审批")
    b.event([f"客户{c[1]}来电咨询发票抬头怎么修改，约好明天回电。"], [f"{c[1]}是哪天来电咨询发票抬头的？"], day_zh)
    b.add(f"客户{c[2]}的账号是 ACC-{b.digits(5)}，企业版，按年付费。")
    b.add(f"新建了工单 SUP-{b.rng.randrange(6000, 6999)}：客户{c[2]}反馈导出的 PDF 发票中文显示成方框。")


SUPPORT_ZH_FILL = (
    ("回复了{c}关于{topic}的问题。", "把{guide}的帮助文档链接发给了{c}。", "{c}对我们关于{topic}的快速回复表示感谢。",
     "{c}问{topic}有没有排进开发计划。", "跟进了{c}的{topic}问题，对方还没回复。"),
    {"c": "刘洋|陈静|黄磊|周敏|吴昊|郑凯", "topic": "周期性发票|电子发票|发票编号规则|逾期提醒|子账号权限|红字发票",
     "guide": "入门指南|批量导入|发票模板|接口鉴权"},
)


def travel_en(b: Builder) -> None:
    """The travel agent: clients' preferences, bookings, rebookings, trips and booking codes."""
    c = b.pick("Alice Moreau|Bob Okafor|Dana Whitfield|Kenji Sato|Priya Nair|Marco Rossi", 6)
    b.fact("fact", [f"{c[0]} prefers an aisle seat and never flies before 8am."], [f"Which seat does {c[0]} prefer?"],
           "aisle")
    b.fact("fact", [f"{c[1]} is vegetarian: request VGML meals on long flights."],
           [f"Which meal should be requested for {c[1]} on flights?"], "VGML")
    b.fact("fact", [f"{c[2]} collects points with Marriott Bonvoy, so prefer Marriott hotels."],
           [f"Which hotel loyalty programme does {c[2]} use?"], "Marriott Bonvoy")
    flights = [f"{b.one(_l('LH|TP|KL|IB'))} {b.digits(4)}" for _ in range(7)]
    b.chain([[f"Booked {c[3]} on {flights[0]} from Frankfurt to Lisbon."],
             [f"{c[3]}'s Lisbon flight moved from {flights[0]} to {flights[1]} because of the strike."]],
            [f"Which flight is {c[3]} on now for the trip to Lisbon?"], flights[1],
            [f"Which flight was {c[3]} booked on before the strike?"], flights[0])
    b.chain([[f"Hotel for {c[4]} in Porto: Hotel Infante Sagres, three nights."],
             [f"Swapped {c[4]}'s Porto hotel from Infante Sagres (overbooked) to the Pestana Vintage."]],
            [f"Which hotel is {c[4]} staying at in Porto?"], "Pestana Vintage",
            [f"Which hotel was {c[4]} booked into in Porto before the swap?"], "Infante Sagres")
    b.fact("unrelated", [f"Hotel for {c[0]} in Lisbon: Memmo Alfama, two nights."],
           [f"Which hotel is {c[0]} staying at in Lisbon?"], "Memmo Alfama")
    b.chain([[f"Rental car for {c[5]} in Madrid: pick-up at 10:00 at the airport."],
             [f"{c[5]}'s rental car pick-up in Madrid changed from 10:00 to 14:30."]],
            [f"What time is {c[5]}'s rental car pick-up in Madrid?"], "14:30",
            [f"What was the original pick-up time of {c[5]}'s rental car in Madrid?"], "10:00")
    for client, city in [(c[0], "Copenhagen"), (c[5], "Athens")]:
        b.event([f"{client} flew to {city} for a conference."], [f"When did {client} fly to {city}?"], day_en)
    early, late = sorted([b.at(), b.at()])
    older = b.add(f"{c[1]} went to Lisbon for a client workshop.", early)
    newer = b.add(f"{c[1]} is back in Lisbon for the product launch.", late)
    b.ask("temporal", [f"When was {c[1]}'s most recent trip to Lisbon?"], day_en(late), [newer], [older])
    code, pnr = f"HC-{b.digits(6)}", "".join(b.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(6))
    b.fact("identifier", [f"Hotel confirmation for {c[2]} at the Marriott in Vienna: {code}."],
           [f"What is the confirmation code for {c[2]}'s hotel in Vienna?"], code)
    b.fact("identifier", [f"{c[4]}'s booking reference for the Rome flights is {pnr}."],
           [f"What is {c[4]}'s booking reference for the Rome flights?"], pnr)
    for client, (out, back), direction in [(c[0], flights[2:4], "return"), (c[2], flights[4:6], "outbound")]:
        there = b.add(f"Outbound: {client} on {out}, Berlin to Barcelona.")
        home = b.add(f"Return: {client} on {back}, Barcelona to Berlin.")
        wanted = home if direction == "return" else there
        b.ask("distractor", [f"What is the flight number of {client}'s {direction} flight between Berlin and "
                             "Barcelona?"], back if direction == "return" else out, [wanted])


TRAVEL_EN_FILL = (
    ("Checked the visa rules for {country} for {c}.", "Sent {c} three hotel options in {city}.",
     "{c} asked about lounge access at {airport}.", "Price alert: {city} fares dropped to {price} EUR.",
     "{c} wants a quiet room on a high floor in {city}.", "Compared train and flight times to {city} for {c}."),
    {"c": "Alice Moreau|Bob Okafor|Dana Whitfield|Kenji Sato|Priya Nair|Marco Rossi", "country": "Japan|Brazil|India|"
     "Turkey|Kenya", "city": "Lisbon|Porto|Berlin|Vienna|Rome|Madrid|Athens|Oslo", "airport": "Frankfurt|Heathrow|"
     "Schiphol|Munich|Zurich", "price": "|".join(map(str, range(49, 260, 10)))},
)
