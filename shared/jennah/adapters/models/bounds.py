"""The errors every model adapter raises at a call's bounds, worded one way.

A call that outlives its time bound is DEADLINE_EXCEEDED and one whose answer
was cut at its output bound is ABORTED; both messages name the bound, and both
carry the usage reported before the failure (`inputTokens`, `outputTokens`:
zero when none was reported), so formation can still record it.
"""

from __future__ import annotations

from jennah.errors import Aborted, DeadlineExceeded

TIME_BOUND_REASON = "MODEL_CALL_TIME_BOUND"
OUTPUT_BOUND_REASON = "MODEL_CALL_OUTPUT_BOUND"


def usage_metadata(input_tokens: int = 0, output_tokens: int = 0) -> dict[str, str]:
    """Usage as error metadata (google.rpc.ErrorInfo metadata values are strings)."""
    return {"inputTokens": str(input_tokens), "outputTokens": str(output_tokens)}


def time_bound_exceeded(
    deadline_seconds: float,
    *,
    call: str = "model call",
    input_tokens: int = 0,
    output_tokens: int = 0,
) -> DeadlineExceeded:
    """e.g. "the model call exceeded its 30 s bound"."""
    return DeadlineExceeded(
        f"the {call} exceeded its {deadline_seconds:g} s bound",
        reason=TIME_BOUND_REASON,
        metadata=usage_metadata(input_tokens, output_tokens),
    )


def output_bound_exceeded(
    max_output_tokens: int, *, input_tokens: int = 0, output_tokens: int = 0
) -> Aborted:
    """e.g. "the model's answer was cut at its bound of max output tokens per call (32768)"."""
    return Aborted(
        "the model's answer was cut at its bound of max output tokens per call "
        f"({max_output_tokens})",
        reason=OUTPUT_BOUND_REASON,
        metadata=usage_metadata(input_tokens, output_tokens),
    )


def estimate_tokens(text: str) -> int:
    """The deterministic token count the offline models report: ~4 characters a token."""
    return len(text) // 4
