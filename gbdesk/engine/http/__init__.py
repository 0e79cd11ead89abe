"""The HTTP engine: any OpenAI-compatible server (llama.cpp's llama-server, vLLM, Ollama,
llama-cpp-python's server) as a gbdesk engine, in parts by job:

- `transport`: one server's connections, time-outs as a deadline on the whole reply, the
  waiting line while the server is silent;
- `replies`: what a reply must look like before it is believed (typed schemas);
- `answers`: what an answer that is not a reply to believe means (errors, not JSON, not
  fitting, another model);
- `backend`: `HttpBackend` — requests with retries, generating;
- `connecting`: probing the endpoint when a backend is made, and its one-line errors;
- `scoring`: log-likelihoods from echoed prompt logprobs, and what an endpoint can do;
- `urls`: endpoint addresses and ``URL#model`` specs;
- `catalogue`: endpoints stored as model rows, and the words for their capabilities.
"""

from gbdesk.engine.endpoints import CAPABILITIES, ENDPOINT_PRESETS, SERVERS_WITH
from gbdesk.engine.http.backend import (
    DEFAULT_BACKOFF_S,
    DEFAULT_MAX_RETRIES,
    ENDPOINT_KIND,
    MAX_BACKOFF_S,
    MAX_CONCURRENCY,
    RETRY_STATUSES,
    HttpBackend,
    check_connection,
)
from gbdesk.engine.http.catalogue import (
    capability_summary,
    capability_words,
    check_capabilities,
    endpoint_capabilities,
    endpoint_entries,
    find_endpoint,
    register_endpoint,
    resolve_endpoint,
    store_capabilities,
    unmet_capability,
    with_endpoints,
)
from gbdesk.engine.http.transport import (
    DEFAULT_CONNECT_TIMEOUT_S,
    READ_TIMEOUT_BASE_S,
    READ_TIMEOUT_RETRIES,
    SLOWEST_TOKENS_PER_S,
    WAIT_NOTICE_S,
    WAIT_RECENT,
)
from gbdesk.engine.http.urls import endpoint_spec, normalize_base_url, parse_endpoint_spec

__all__ = [
    "CAPABILITIES",
    "DEFAULT_BACKOFF_S",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_MAX_RETRIES",
    "ENDPOINT_KIND",
    "ENDPOINT_PRESETS",
    "MAX_BACKOFF_S",
    "MAX_CONCURRENCY",
    "READ_TIMEOUT_BASE_S",
    "READ_TIMEOUT_RETRIES",
    "RETRY_STATUSES",
    "SERVERS_WITH",
    "SLOWEST_TOKENS_PER_S",
    "WAIT_NOTICE_S",
    "WAIT_RECENT",
    "HttpBackend",
    "capability_summary",
    "capability_words",
    "check_capabilities",
    "check_connection",
    "endpoint_capabilities",
    "endpoint_entries",
    "endpoint_spec",
    "find_endpoint",
    "normalize_base_url",
    "parse_endpoint_spec",
    "register_endpoint",
    "resolve_endpoint",
    "store_capabilities",
    "unmet_capability",
    "with_endpoints",
]
