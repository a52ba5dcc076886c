"""Project sessions: Atlas (English) and 凤凰 (Chinese, English identifiers)."""

from __future__ import annotations

from datetime import datetime, timedelta

from evals.mixed_builder import Builder, day_en, day_zh, month_en, month_zh


def project_en(b: Builder) -> None:
    """Atlas, an English B2B invoicing project: decisions, migrations, incidents, tickets, files, error codes."""
    a, c, d = b.pick("Priya|Marcus|Jonas|Leila|Tobias|Mei", 3)
    b.fact("fact", ["Atlas is a B2B invoicing platform: the API is Python (FastAPI), the web app React.",
                    "Stack reminder: Atlas runs a FastAPI (Python) backend behind a React front end."],
           ["What is the Atlas API written in?", "Which framework does the Atlas backend use?"], "FastAPI")
    b.fact("fact", ["Decision: Atlas drops support for Internet Explorer 11 from release 2.5.",
                    "The team agreed to stop supporting IE11 starting with release 2.5."],
           ["From which release is Internet Explorer 11 no longer supported?"], "release 2.5")
    b.fact("fact", ["Release policy: code freeze starts two working days before every release.",
                    "No merges to main in the two working days before a release (code freeze)."],
           ["How long before a release does the code freeze start?"], "two working days")
    b.fact("fact", [f"The design doc for multi-currency invoices is in Notion under 'Billing v2', written by {c}."],
           ["Who wrote the design doc for multi-currency invoices?"], c)
    b.fact("fact", ["Standup is at 09:45 Berlin time, except Fridays when it is async in Slack."],
           ["When is the Atlas standup?", "What time is standup?"], "09:45 Berlin time")
    b.chain([["Atlas stores invoices in MySQL 8 on RDS."],
             ["The migration from MySQL to PostgreSQL 16 is finished; MySQL stays read-only until switch-off."]],
            ["Which database does Atlas use now?", "Where are Atlas invoices stored at the moment?"], "PostgreSQL 16",
            ["Which database did Atlas use before PostgreSQL?"], "MySQL 8")
    b.fact("unrelated", ["Atlas's search service runs on OpenSearch 2, fed from the invoice events."],
           ["Which search engine does Atlas use?"], "OpenSearch 2")
    planned, moved = b.at(0.2, 0.4), b.at(0.45, 0.6)
    first_date = moved + timedelta(days=b.rng.randrange(10, 20))
    second_date = first_date + timedelta(days=b.rng.randrange(14, 28))
    old = b.add(f"Release 2.4 is planned for {day_en(first_date)}.", planned)
    new = b.add(f"Release 2.4 slipped from {day_en(first_date)} to {day_en(second_date)}: the data migration "
                "needs another sprint.", moved)
    new.supersedes.append(old)
    b.ask("update", ["When is release 2.4 planned now?", "What is the current date for release 2.4?"],
          day_en(second_date), [new], [old])
    b.ask("historical", ["What was the original date for release 2.4?", "When was release 2.4 planned before it "
                         "slipped?"], day_en(first_date), [old])
    b.chain([[f"{a} owns the billing service and reviews every change to it."],
             [f"Billing service ownership moved from {a} to {d}; {a} joins the search team."]],
            ["Who owns the billing service now?"], d, [f"Who owned the billing service before {d}?"], a)
    b.chain([["CI runs on Jenkins; the pipeline is defined in the Jenkinsfile at the repo root."],
             ["CI moved from Jenkins to GitHub Actions; workflows live in .github/workflows/."]],
            ["Which CI system does Atlas use now?"], "GitHub Actions",
            ["Which CI system did Atlas use before GitHub Actions?"], "Jenkins")
    b.chain([["The public API rate limit is 100 requests per minute per key."],
             ["The public API rate limit was raised from 100 to 300 requests per minute per key."]],
            ["What is the current public API rate limit?"], "300 requests per minute per key",
            ["What was the public API rate limit before it was raised?"], "100 requests per minute")
    b.fact("unrelated", ["The internal admin API allows 20 requests per minute per user."],
           ["What is the rate limit of the internal admin API?"], "20 requests per minute")
    # Restated updates: the newer memory does not name the value it replaces.
    b.chain([["The mobile app project is codenamed Falcon."],
             ["The mobile app project is called Osprey; marketing picked the name.",
              "Marketing named the mobile app project Osprey."]],
            ["What is the mobile app project called?"], "Osprey",
            ["What was the mobile app project called before Osprey?"], "Falcon")
    due = datetime(2024, 3, 1) + timedelta(days=b.rng.randrange(0, 200))
    later = due + timedelta(days=b.rng.randrange(14, 40))
    b.chain([[f"The SOC 2 audit evidence is due on {day_en(due)}."],
             [f"The SOC 2 audit evidence is due on {day_en(later)}; the auditor gave us more time."]],
            ["When is the SOC 2 audit evidence due?"], day_en(later),
            ["What was the SOC 2 evidence deadline before it moved?"], day_en(due))
    incidents = [("Incident: checkout latency spiked to 4 s for 40 minutes; root cause was a missing index on "
                  "invoices.customer_id.", "When did the checkout latency incident happen?"),
                 ("Incident: the EU region was down for 12 minutes after a bad DNS change.",
                  "When was the EU region outage?"),
                 ("Deployed atlas-api 2.3.0 to production; no rollback needed.",
                  "When did atlas-api 2.3.0 go to production?"),
                 ("Load test on staging: 1,200 requests per second before p95 latency passed 300 ms.",
                  "When did the team run the staging load test?")]
    dated = [b.event([text], [query], day_en) for text, query in incidents]
    first = "the checkout latency incident" if dated[0].occurred_at < dated[1].occurred_at else "the EU region outage"
    b.ask("temporal", ["Which happened first, the EU region outage or the checkout latency incident?"], first,
          dated[:2])
    early, late = b.at(0.0, 0.5), b.at(0.5, 1.0)
    b.add("Retro: the release captain rotates every sprint.", early)
    retro = b.add("Retro: flaky tests get fixed or deleted within a week.", late)
    b.ask("temporal", [f"What did the team agree on in the {month_en(late)} retro?"],
          "flaky tests get fixed or deleted within a week", [retro])
    numbers = b.rng.sample(range(1100, 1999), 9)
    b.world["timeout_ticket"] = f"ATL-{numbers[0]}"
    tickets = [("distractor", "invoice export times out for accounts with more than 10,000 invoices"),
               ("distractor", "invoice export drops the currency column in CSV files"),
               ("distractor", "the invoice PDF export renders Polish characters in the wrong font"),
               ("identifier", "password reset emails arrive twenty minutes late"),
               ("identifier", "SSO login fails for Okta users with upper-case email addresses"),
               ("identifier", "dark mode makes the invoice total unreadable"),
               ("identifier", "search returns archived customers"),
               ("identifier", "the VAT summary rounds each line instead of the total"),
               ("identifier", "the mobile menu hides the logout button")]
    for number, (kind, topic) in zip(numbers, tickets, strict=True):
        ticket = f"ATL-{number}"
        memory = b.add(b.one([f"{ticket}: {topic}.", f"Opened {ticket} for the bug where {topic}.",
                              f"{ticket} tracks the bug where {topic}; assigned to {b.one([a, c, d])}."]))
        if kind == "identifier" and b.rng.random() < 0.4:
            b.ask(kind, [f"What is {ticket} about?", f"What bug does {ticket} track?"], topic, [memory])
        else:
            b.ask(kind, [f"Which ticket tracks the bug where {topic}?", f"What is the ticket number for the bug "
                         f"where {topic}?"], ticket, [memory])
    files = [("distractor", "services/webhooks/retry.py", "the retry backoff for outgoing webhooks"),
             ("distractor", "services/email/retry.py", "the retry policy for transactional emails"),
             ("distractor", "services/payments/retry_policy.py", "the retry rules for failed card payments"),
             ("identifier", "atlas/billing/currency.py", "currency rounding"),
             ("identifier", "web/src/pages/InvoiceList.tsx", "the invoice list page")]
    for kind, path, what in files:
        b.fact(kind, [f"{what[0].upper()}{what[1:]} lives in {path}.", f"Code pointer: {what} is in {path}."],
               [f"Which file holds {what}?", f"Where in the code is {what}?"], path)
    for code, when in [("ERR_QUOTA_EXCEEDED", "an account goes over its monthly invoice quota"),
                       ("ERR_VAT_ID_INVALID", "a customer's VAT number fails the VIES check")]:
        memory = b.add(f"The API returns {code} when {when}.")
        b.ask("identifier", [f"Which error code does the API return when {when}?"], code, [memory])
    b.fact("identifier", ["The redesigned checkout sits behind the feature flag new_checkout_v2."],
           ["Which feature flag gates the redesigned checkout?"], "new_checkout_v2")


PROJECT_EN_FILL = (
    ("Standup: {p} is working on {component}.", "PR #{pr} ({change}) was merged by {p}.",
     "Deployed {service} 1.{minor}.{patch} to {env}.", "{p} is out of office until {weekday}.",
     "{p} asked for a review of the {component} change.", "{p} paired with {q} on {component} this afternoon.",
     "Sprint {sprint} planning: {component} work carried over.", "Flaky test {test} failed again in CI.",
     "{p} wrote a short RFC about {component}."),
    {"p": "Priya|Marcus|Jonas|Leila|Tobias|Mei|Sam", "q": "Ana|Felix|Noor|Ravi",
     "pr": "|".join(map(str, range(400, 460))),
     "component": "the invoice list|the tax engine|the customer importer|the PDF renderer|the webhook dispatcher|"
                  "the audit log|the dunning emails|the reporting dashboard",
     "change": "add pagination to /v1/customers|bump FastAPI|fix the timezone bug in reminders|cache exchange rates|"
               "remove unused feature flags|tighten CORS rules|log request ids",
     "service": "atlas-web|atlas-worker|atlas-scheduler", "minor": "7|8|9", "patch": "0|1|2|3",
     "env": "staging|preview",
     "weekday": "Monday|Tuesday|Wednesday|Thursday|Friday", "sprint": "|".join(map(str, range(30, 60))),
     "test": "test_invoice_totals|test_webhook_signature|test_login_redirect|test_csv_import"},
)


def project_zh(b: Builder) -> None:
    """凤凰 (Phoenix), a Chinese order-platform project with English identifiers."""
    a, c, d = b.pick("张伟|李娜|王磊|刘洋|陈静|杨帆", 3)
    b.fact("fact", ["凤凰项目的后端用 Go 写，前端用 Vue 3。", "技术栈备忘：凤凰后端是 Go，前端是 Vue 3。"],
           ["凤凰项目的后端是用什么语言写的？"], "Go")
    b.fact("fact", ["凤凰项目每周二下午三点开周会，用腾讯会议。"], ["凤凰项目的周会是什么时候？"], "每周二下午三点")
    b.fact("fact", [f"订单中台的技术方案文档放在飞书知识库里，作者是{c}。"], ["订单中台的技术方案文档是谁写的？"], c)
    b.fact("fact", ["决定：从 3.0 版本开始不再支持 iOS 13。"], ["从哪个版本开始不再支持 iOS 13？"], "3.0")
    b.chain([["凤凰项目的订单数据存在 MySQL 5.7 里。"], ["订单库已经从 MySQL 迁移到 TiDB，MySQL 只保留一个月只读。"]],
            ["凤凰项目现在用的是什么数据库？"], "TiDB", ["凤凰项目迁移到 TiDB 之前用的是什么数据库？"], "MySQL")
    b.fact("unrelated", ["凤凰项目的搜索服务用的是 Elasticsearch 8。"], ["凤凰项目的搜索服务用的是什么？"], "Elasticsearch 8")
    planned, moved = b.at(0.2, 0.4), b.at(0.45, 0.6)
    first_date = moved + timedelta(days=b.rng.randrange(10, 20))
    second_date = first_date + timedelta(days=b.rng.randrange(14, 28))
    old = b.add(f"凤凰 3.0 计划在{day_zh(first_date)}上线。", planned)
    new = b.add(f"凤凰 3.0 的上线时间从{day_zh(first_date)}推迟到了{day_zh(second_date)}，原因是支付联调没完成。", moved)
    new.supersedes.append(old)
    b.ask("update", ["凤凰 3.0 现在计划什么时候上线？"], day_zh(second_date), [new], [old])
    b.ask("historical", ["凤凰 3.0 原来计划哪天上线？"], day_zh(first_date), [old])
    b.chain([[f"支付模块由{a}负责。"], [f"支付模块的负责人从{a}换成了{d}，{a}调去做搜索了。"]],
            ["支付模块现在由谁负责？"], d, [f"支付模块在{d}之前由谁负责？"], a)
    b.fact("unrelated", [f"退款模块由{c}负责。"], ["退款模块由谁负责？"], c)
    b.chain([["消息队列用的是 RabbitMQ。"], ["消息队列从 RabbitMQ 换成了 Kafka，旧队列下周下线。"]],
            ["凤凰项目现在用什么消息队列？"], "Kafka", ["凤凰项目换成 Kafka 之前用的是什么消息队列？"], "RabbitMQ")
    due = datetime(2024, 3, 1) + timedelta(days=b.rng.randrange(0, 200))
    later = due + timedelta(days=b.rng.randrange(14, 40))
    b.chain([[f"数据报表改版的截止日期是{day_zh(due)}。"],  # restated: the old value unnamed
             [f"数据报表改版的截止日期是{day_zh(later)}，产品那边同意延期了。"]],
            ["数据报表改版的截止日期是哪天？"], day_zh(later), ["数据报表改版原来的截止日期是哪天？"], day_zh(due))
    events = [("线上故障：支付回调超时，约 300 笔订单状态卡在“待支付”，持续 25 分钟。", "支付回调超时的故障是哪天发生的？"),
              ("压测结果：下单接口在 2000 QPS 时 p99 延迟超过 500 毫秒。", "下单接口的压测是哪天做的？"),
              ("order-service v2.8.0 已发布到生产环境，没有回滚。", "order-service v2.8.0 是哪天发布到生产环境的？")]
    for text, query in events:
        b.event([text], [query], day_zh)
    early, late = b.at(0.0, 0.5), b.at(0.5, 1.0)
    b.add("复盘会结论：每个迭代轮换发布负责人。", early)
    retro = b.add("复盘会结论：不稳定的测试一周内必须修复或删除。", late)
    b.ask("temporal", [f"{month_zh(late)}的复盘会得出了什么结论？"], "不稳定的测试一周内必须修复或删除", [retro])
    tickets = [("distractor", "部分退款时退款金额计算错误"), ("distractor", "退款审批通过后没有发短信通知用户"),
               ("identifier", "支付回调超时后订单状态没有更新"), ("identifier", "优惠券叠加使用时满减没有生效"),
               ("identifier", "订单导出 Excel 时手机号被截断"), ("identifier", "商家后台在 Safari 上无法上传图片")]
    for number, (kind, topic) in zip(b.rng.sample(range(300, 999), len(tickets)), tickets, strict=True):
        ticket = f"PHX-{number}"
        memory = b.add(b.one([f"{ticket}：{topic}。", f"新建了工单 {ticket}，问题是{topic}。"]))
        if kind == "identifier" and b.rng.random() < 0.4:
            b.ask(kind, [f"{ticket} 是什么问题？"], topic, [memory])
        else:
            b.ask(kind, [f"“{topic}”这个问题对应哪个工单？", f"哪个工单记录了{topic}的问题？"], ticket, [memory])
    for kind, path, what in [("distractor", "internal/refund/calc.go", "退款金额的计算逻辑"),
                             ("distractor", "internal/refund/notify.go", "退款通知的发送逻辑"),
                             ("identifier", "internal/payment/callback.go", "支付回调的处理逻辑"),
                             ("identifier", "web/src/views/OrderExport.vue", "订单导出页面")]:
        b.fact(kind, [f"{what}在 {path} 里。", f"代码位置：{what}写在 {path}。"], [f"{what}的代码在哪个文件里？"], path)


PROJECT_ZH_FILL = (
    ("站会：{p}在做{component}。", "{p}合并了 PR #{pr}（{change}）。", "{service} v1.{minor}.{patch} 已部署到{env}。",
     "{p}请假到{weekday}。", "{p}和{q}下午一起排查{component}的问题。",
     "第{sprint}个迭代计划会：{component}的工作延到下个迭代。",
     "CI 里的不稳定测试 {test} 又失败了。", "{p}请大家帮忙评审{component}的改动。"),
    {"p": "张伟|李娜|王磊|刘洋|陈静|杨帆", "q": "小赵|小孙|老周|阿强", "pr": "|".join(map(str, range(200, 260))),
     "component": "订单列表|库存同步|优惠券服务|支付网关|物流跟踪|商家后台|数据报表",
     "change": "给订单接口加分页|升级 Go 版本|修复时区问题|缓存商品价格|删除无用的开关|增加请求日志",
     "service": "order-service|stock-service|coupon-service", "minor": "3|4|5", "patch": "0|1|2|3",
     "env": "测试环境|预发环境", "weekday": "周一|周二|周三|周四|周五", "sprint": "|".join(map(str, range(10, 40))),
     "test": "TestRefundAmount|TestCouponStack|TestOrderExport|TestStockSync"},
)
