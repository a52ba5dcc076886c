"""The mixed suite's bilingual templates, one function per kind of session, and ``PLANS`` that sizes them.

``"a|b|c"`` strings are pools; ``b.fact``/``b.chain`` store memories and offer a question. The same
template fills every session of a kind with other values (Alice and Bob, 王芳 and 陈杰).
"""

from __future__ import annotations

from evals.mixed_builder import Plan
from evals.mixed_templates.agents import SUPPORT_EN_FILL, SUPPORT_ZH_FILL, TRAVEL_EN_FILL, support_en, support_zh, travel_en
from evals.mixed_templates.people import PERSON_EN_FILL, PERSON_ZH_FILL, person_en, person_zh
from evals.mixed_templates.projects import PROJECT_EN_FILL, PROJECT_ZH_FILL, project_en, project_zh

__all__ = ["PLANS"]

PLANS = (
    Plan("user:alice", "en", 1, 170, (4, 5, 4, 2, 2, 5, 3), person_en, PERSON_EN_FILL, ("chat", "email", "voice note"),
         "an English-speaking user in Europe", ("Alice", "her")),
    Plan("user:bob", "en", -5, 130, (3, 4, 2, 1, 1, 4, 2), person_en, PERSON_EN_FILL, ("chat", "email"),
         "an English-speaking user in New York; same templates as Alice, other values", ("Bob", "his")),
    Plan("user:wang-fang", "zh", 8, 110, (3, 4, 3, 1, 2, 4, 3), person_zh, PERSON_ZH_FILL, ("微信", "语音"),
         "a Chinese-speaking user", ("王芳", "她")),
    Plan("user:chen-jie", "zh", 8, 70, (2, 3, 1, 0, 1, 3, 2), person_zh, PERSON_ZH_FILL, ("微信",),
         "a Chinese-speaking user; same templates as 王芳, other values", ("陈杰", "他")),
    Plan("project:atlas", "en", 1, 170, (3, 4, 3, 6, 3, 5, 2), project_en, PROJECT_EN_FILL, ("slack", "jira", "github"),
         "an English software project: tickets, files, error codes, migrations, incidents"),
    Plan("project:phoenix", "zh", 8, 120, (2, 3, 2, 3, 1, 4, 2), project_zh, PROJECT_ZH_FILL, ("飞书", "jira", "github"),
         "a Chinese software project with English identifiers"),
    Plan("agent:support-bot", "en", 0, 100, (3, 3, 2, 4, 2, 3, 1), support_en, SUPPORT_EN_FILL, ("zendesk", "email"),
         "a support agent, English customers (shares a ticket id with project:atlas)"),
    Plan("agent:support-bot", "zh", 0, 30, (0, 1, 1, 0, 0, 1, 0), support_zh, SUPPORT_ZH_FILL, ("zendesk",),
         "the same support agent's Chinese-speaking customers"),
    Plan("agent:travel-planner", "en", 1, 100, (2, 3, 3, 2, 2, 3, 1), travel_en, TRAVEL_EN_FILL, ("email", "chat"),
         "a travel agent whose clients share names with other sessions"),
)
