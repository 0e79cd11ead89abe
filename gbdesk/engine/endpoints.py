"""What OpenAI-compatible servers can do, and the local ones people already run — kept
apart from `gbdesk.engine.http` (which needs urllib3 and pydantic) so the CLI's
help and the app's dialogs can name them without loading the HTTP client."""

from __future__ import annotations

#: what `HttpBackend.capabilities` finds out, one small request each: key → words
CAPABILITIES: dict[str, str] = {
    "chat": "chat generation",
    "prompt_logprobs": "log-probabilities of prompt tokens",
    "top_logprobs": "top log-probabilities",
}
#: the servers that have a capability (named when a probe is refused for lacking it)
SERVERS_WITH: dict[str, str] = {
    "chat": "vLLM, llama-server, Ollama, LM Studio and llama-cpp-python's server "
    "(python -m llama_cpp.server), for a model with a chat template",
    "prompt_logprobs": "vLLM (vllm serve), and llama-cpp-python's server "
    "(python -m llama_cpp.server) for models that add a BOS token",
    "top_logprobs": "vLLM, llama-server, llama-cpp-python's server and recent Ollama",
}
#: local servers people already run: preset name → (title, base URL, what to know)
ENDPOINT_PRESETS: dict[str, tuple[str, str, str]] = {
    "ollama": (
        "Ollama",
        "http://localhost:11434/v1",
        "model names as `ollama list` shows them (e.g. llama3.1:8b); generation only — no "
        "log-probabilities of prompt tokens, so no perplexity probes",
    ),
    "lmstudio": (
        "LM Studio",
        "http://localhost:1234/v1",
        "start its server (Developer → Start server); model names as its /v1/models lists "
        "them; generation only — no log-probabilities of prompt tokens",
    ),
    "llama-server": (
        "llama.cpp's llama-server",
        "http://localhost:8080/v1",
        "any model name (it serves the one it loaded); concurrency = its --parallel; "
        "generation only — it refuses echo, so no perplexity probes",
    ),
}

__all__ = ["CAPABILITIES", "ENDPOINT_PRESETS", "SERVERS_WITH"]
