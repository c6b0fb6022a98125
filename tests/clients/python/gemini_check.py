"""Drives the official google-genai SDK (the Gemini API, not its OpenAI-compatible endpoint)
against one base URL and prints what the client got as JSON: per call the function calls (name,
args, id) the SDK surfaced, the text, the finish reasons as the SDK parsed them, and every
warning the SDK issued (e.g. "FUNCTION_CALL is not a valid FinishReason"). Run once direct
against the upstream, once through tooltap and once against `tooltap replay`; the test compares.

Cases, each with `generate_content` and `generate_content_stream`: automatic function calling
OFF (one call, parallel calls in one event, parallel calls in separate events, text only); ON (a
Python function tool: the SDK runs it and sends the functionResponse back itself, a two-turn
loop); and an explicit two-turn loop that sends the function responses back by hand. Then the same SDK as a Vertex AI client
(`vertexai=True`, a stub OAuth token; aimock routes Vertex under /v1): one call buffered, text
streamed, on `/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:...`.

Usage: gemini_check.py BASE_URL [faithful|unfaithful]. `unfaithful` asks for aimock's default
tool-call answer, whose finishReason is `FUNCTION_CALL`, a value Gemini does not have, and
prints per call either what the SDK got or the error it raised (enforce mode turns the
violation into one)."""
import datetime, json, logging, sys, warnings

from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials

base_url, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "faithful")
# aimock routes only /v1beta (google-genai 3.6.1 defaults the Developer API to /v1).
client = genai.Client(api_key="gemini-test-key",
                      http_options=types.HttpOptions(base_url=base_url, api_version="v1beta",
                                                     retry_options=types.HttpRetryOptions(attempts=1)))
# A Vertex AI client sends `Authorization: Bearer <token>`; a token that never expires here.
vertex = genai.Client(vertexai=True, project="tooltap-test", location="us-central1",
                      credentials=Credentials(token="vertex-test-token",
                                              expiry=datetime.datetime(2999, 1, 1)),
                      http_options=types.HttpOptions(base_url=base_url, api_version="v1",
                                                     retry_options=types.HttpRetryOptions(attempts=1)))
MODEL = "gemini-2.5-flash"
FORECAST = types.FunctionDeclaration(
    name="get_forecast", description="Today's forecast for a city",
    parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"], "additionalProperties": False})
TOOLS = [types.Tool(function_declarations=[FORECAST])]
OFF = types.GenerateContentConfig(
    tools=TOOLS, automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))


def get_forecast(city: str) -> dict:
    """Today's forecast for a city."""
    return {"city": city, "forecast": "sunny", "degrees": 24}


ON = types.GenerateContentConfig(tools=[get_forecast])


def finish(candidate):
    reason = candidate.finish_reason
    return None if reason is None else getattr(reason, "value", str(reason))


def seen(response):
    """What one response (or one streamed chunk) gave the SDK's caller."""
    candidates = response.candidates or []
    parts = [p for c in candidates if c.content for p in (c.content.parts or [])]
    return {
        "calls": [{"name": c.name, "args": c.args, "id": c.id} for c in (response.function_calls or [])],
        "text": "".join(p.text for p in parts if p.text is not None and not p.thought),
        "finish_reasons": [finish(c) for c in candidates],
        "afc_history": [
            {"role": content.role,
             "calls": [p.function_call.name for p in content.parts or [] if p.function_call],
             "responses": [{"name": p.function_response.name, "id": p.function_response.id}
                           for p in content.parts or [] if p.function_response]}
            for content in (response.automatic_function_calling_history or [])],
    }


class Logged(logging.Handler):
    """Keeps what the SDK logged at WARNING and above."""
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def recorded(call):
    """Runs `call`, keeping every warning it raised (the SDK warns on an unknown enum value)
    and every warning it logged."""
    logged = Logged()
    logger = logging.getLogger("google_genai")
    logger.addHandler(logged)
    logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = call()
    finally:
        logger.removeHandler(logged)
    got["warnings"] = sorted({str(w.message) for w in caught})
    got["logged"] = sorted(set(logged.messages))
    return got


def buffered(text, config=OFF, sdk=client):
    return recorded(lambda: seen(sdk.models.generate_content(model=MODEL, contents=text, config=config)))


def streamed(text, config=OFF, sdk=client):
    return recorded(lambda: {"chunks": [seen(chunk) for chunk in sdk.models.generate_content_stream(
        model=MODEL, contents=text, config=config)]})


def two_turns(text):
    """The explicit loop: the model's content goes back with one functionResponse per call."""
    def run():
        ask = types.Content(role="user", parts=[types.Part(text=text)])
        first = client.models.generate_content(model=MODEL, contents=[ask], config=OFF)
        answers = [types.Part(function_response=types.FunctionResponse(
            id=call.id, name=call.name, response=get_forecast(**call.args)))
            for call in first.function_calls]
        second = client.models.generate_content(
            model=MODEL, contents=[ask, first.candidates[0].content,
                                   types.Content(role="user", parts=answers)], config=OFF)
        return {"first": seen(first), "second": seen(second)}
    return recorded(run)


def guarded(call, text):
    try:
        return call(text)
    except Exception as error:  # whatever the SDK raises: its type and message are the output
        return {"error": type(error).__name__, "message": str(error)}


out = {}
if mode == "faithful":
    cases = {"one": "Gemini case one: forecast for Lyon",
             "parallel": "Gemini case parallel: forecast for Lyon and Nantes",
             "split": "Gemini case split: forecast for Lille and Nice",
             "text": "Gemini case text: say hello"}
    for name, text in cases.items():
        out[name] = {"buffered": buffered(text), "stream": streamed(text)}
    out["afc"] = {"buffered": buffered(cases["one"], ON), "stream": streamed(cases["one"], ON)}
    out["loop"] = two_turns(cases["split"])
    out["vertex"] = {"buffered": buffered(cases["one"], sdk=vertex),
                     "stream": streamed(cases["text"], sdk=vertex)}
else:
    text = "Gemini case default: forecast for Brest"
    out["default"] = {"buffered": guarded(buffered, text), "stream": guarded(streamed, text)}
print(json.dumps(out))
