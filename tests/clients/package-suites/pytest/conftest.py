"""Every test here runs against its own tooltap (the plugin from the tooltap wheel)."""

import pytest

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.tooltap)
