"""Who may reach what: session patterns (scope.py), the [auth], [http] and [stdio] settings
(settings.py), and the gate every tool call passes (gate.py: scope, delete right, rate limit)."""
