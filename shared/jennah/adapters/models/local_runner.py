"""An in-process GGUF runner on llama.cpp (cyllama), CPU only, for the `local` model.

- Loaded lazily, on the first generation; `cyllama` is imported only then.
- ChatML prompts (the Qwen2.5 family): a system prompt and few-shot turns form a
  *prefix*, decoded once per process; its KV state is kept per distinct prefix and
  restored when calls alternate between prompts (extraction, reconciliation), so a
  call decodes only its own suffix.
- Greedy decoding constrained by a GBNF grammar made from a JSON schema, whose
  whitespace rule allows at most one blank (small models otherwise pad with spaces).
  Each pick checks the plain greedy token against the grammar first and masks the
  whole vocabulary only when that token is not allowed (`local_grammar`; same tokens,
  ~1 ms a token instead of ~40 on 2 cores); `grammar_check=False` always masks.
- Optionally speculative (`local_speculation`): a draft runner (a smaller model with
  the same tokenizer) proposes `draft_tokens` tokens, the model checks them in one
  batch; the answer is the same, token for token.
- `should_stop` is asked between decode batches and between tokens: a call stops
  there, within about a second, and reports what it had used (`Stopped`).
- `finish`, when given, sees the answer so far each time a token closes a JSON object
  or array; returning a text ends the generation with that text as the answer (the
  caller's way out of a small model's loops, e.g. the same fact again and again).
- Threads: the prompt is decoded on every usable core; tokens are generated on every
  usable core too unless the machine is busier than that (1-minute load average above
  the cores + 0.5), then on one thread. Generating a token synchronises the threads at
  every layer, and on a shared machine each wait costs a scheduler tick: measured on 2
  cores at load average ~8, 0.6 tokens/s on 2 threads against 2.4-4 on 1.

Not thread-safe: the `local` model serialises calls with its own lock.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from jennah.adapters.models import local_grammar
from jennah.adapters.models import local_speculation as speculation

DECODE_CHUNK = 64  # prompt tokens decoded between two `should_stop` checks
NORMAL = 4  # llama.cpp's LLAMA_TOKEN_ATTR_NORMAL

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timing:
    """Where one generation's time went: making the KV cache hold the prefix (kept,
    restored or decoded), decoding the prompt's tokens after it, generating the answer."""

    prefix_seconds: float
    suffix_tokens: int  # prompt tokens decoded (after the cached prefix)
    suffix_seconds: float
    generated_tokens: int
    generation_seconds: float
    generation_threads: int
    speculation: speculation.Stats | None = None  # with a draft model
    plain_picks: int = 0  # the target's picks whose plain greedy token the grammar allowed
    masked_picks: int = 0  # the target's picks that masked the whole vocabulary

    def summary(self) -> str:
        text = (
            f"prefix {self.prefix_seconds:.2f} s, suffix {self.suffix_tokens} tokens in "
            f"{self.suffix_seconds:.2f} s, generated {self.generated_tokens} tokens in "
            f"{self.generation_seconds:.2f} s on {self.generation_threads} thread(s); "
            f"picks: {self.plain_picks} checked, {self.masked_picks} masked"
        )
        stats = self.speculation
        if stats is not None and stats.forwards:
            text += (
                f"; speculative: {stats.forwards} target forwards "
                f"({self.generated_tokens / stats.forwards:.2f} tokens each), "
                f"{stats.accepted} of {stats.proposed} drafted tokens accepted"
            )
        return text


@dataclass(frozen=True)
class Generation:
    """One generation: the text, and the tokens it read (whole prompt) and wrote."""

    text: str
    prompt_tokens: int
    generated_tokens: int
    finished: bool  # the model ended its answer (not cut at max_tokens)


class Stopped(Exception):
    """`should_stop` said so; the tokens read and written until then."""

    def __init__(self, prompt_tokens: int, generated_tokens: int) -> None:
        super().__init__("generation stopped")
        self.prompt_tokens = prompt_tokens
        self.generated_tokens = generated_tokens


class ContextFull(Exception):
    """The prompt and the answer's room do not fit the model's context window."""


Shots = Sequence[tuple[str, str]]
Finish = Callable[[str], str | None]  # the answer so far -> the final answer, or go on


class Runner(Protocol):
    """What the `local` model needs of a runner (a fake one in unit tests)."""

    def generate(
        self,
        system: str,
        shots: Shots,
        user: str,
        schema: dict[str, Any],
        max_tokens: int,
        should_stop: Callable[[], bool],
        finish: Finish | None = None,
    ) -> Generation: ...


def chatml(system: str, shots: Shots, user: str) -> tuple[str, str]:
    """(the cacheable prefix, the call's own suffix) of a ChatML conversation."""
    prefix = f"<|im_start|>system\n{system}<|im_end|>\n"
    for question, answer in shots:
        prefix += (
            f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n{answer}<|im_end|>\n"
        )
    prefix += "<|im_start|>user\n"
    return prefix, f"{user}<|im_end|>\n<|im_start|>assistant\n"


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def schema_to_gbnf(schema: dict[str, Any]) -> str:
    """A JSON schema as a GBNF grammar; `space` allows at most one blank, no newline."""
    from cyllama.utils.json_schema_to_grammar import json_schema_to_grammar

    grammar: str = json_schema_to_grammar(json.dumps(schema))
    lines = [
        'space ::= " "?' if line.startswith("space ::=") else line for line in grammar.splitlines()
    ]
    return "\n".join(lines) + "\n"


class LlamaRunner:
    """One model and one context (sequence 0) on llama.cpp through cyllama."""

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = 4096,
        n_threads: int = 0,
        load_average: Callable[[], float] = lambda: os.getloadavg()[0],
        draft: LlamaRunner | None = None,
        draft_tokens: int = 4,
        grammar_check: bool = True,
    ) -> None:
        self.model_path = model_path
        self.grammar_check = grammar_check
        self.draft = draft
        self.draft_tokens = draft_tokens
        self.n_ctx = n_ctx
        self.n_threads = n_threads or usable_cores()
        self._load_average = load_average
        self._loaded = False
        self._cached: list[int] = []  # the tokens whose KV sequence 0 holds, in order
        self._prefixes: dict[str, tuple[list[int], bytes]] = {}
        self._grammars: dict[str, str] = {}
        self._matchers: dict[str, local_grammar.Matcher] = {}
        self._pieces: dict[int, str | None] = {}
        self.timings: list[Timing] = []  # one per finished generation (the caller may clear it)

    def load(self) -> None:
        """Load the weights and make the context (once)."""
        if self._loaded:
            return
        from cyllama.llama import llama_cpp

        llama_cpp.disable_logging()
        llama_cpp.ggml_backend_load_all()
        model_params = llama_cpp.LlamaModelParams()
        model_params.n_gpu_layers = 0
        self._model = llama_cpp.LlamaModel(str(self.model_path), model_params)
        self._vocab = self._model.get_vocab()
        if "<|im_start|>" not in (self._model.get_default_chat_template() or ""):
            raise ValueError(f"{self.model_path}: only ChatML (Qwen) chat templates are supported")
        context_params = llama_cpp.LlamaContextParams()
        context_params.n_ctx = self.n_ctx
        context_params.n_batch = 512
        context_params.n_threads = self.n_threads
        context_params.n_threads_batch = self.n_threads
        context_params.no_perf = True
        self._ctx = llama_cpp.LlamaContext(self._model, context_params)
        self._ctx.set_n_threads(self.n_threads, self.n_threads)
        self._llama = llama_cpp
        self._plain = llama_cpp.LlamaSampler(llama_cpp.LlamaSamplerChainParams())
        self._plain.add_greedy()
        self._loaded = True
        if self.draft is not None:
            self.draft.load()
            if self.draft._vocab.n_vocab != self._vocab.n_vocab:
                raise ValueError(f"{self.draft.model_path}: not this model's tokenizer")

    def prime(self, system: str, shots: Shots) -> None:
        """Decode a prompt's prefix now, so its first call only decodes its own suffix."""
        self.load()
        self._use_prefix(chatml(system, shots, "")[0], lambda: False)
        if self.draft is not None:
            self.draft.prime(system, shots)

    def generate(
        self,
        system: str,
        shots: Shots,
        user: str,
        schema: dict[str, Any],
        max_tokens: int,
        should_stop: Callable[[], bool],
        finish: Finish | None = None,
    ) -> Generation:
        self.load()
        prefix, suffix = chatml(system, shots, user)
        grammar = self._grammar(schema)
        started = time.perf_counter()
        prefix_tokens = self._use_prefix(prefix, should_stop)
        tokens = prefix_tokens + self._tokenize(suffix)
        if len(tokens) + max_tokens > self.n_ctx:
            raise ContextFull(
                f"a prompt of {len(tokens)} tokens and an answer of up to {max_tokens} do not "
                f"fit the local model's context of {self.n_ctx} tokens"
            )
        prefixed = time.perf_counter()
        decoded = self._decode_prompt(tokens, should_stop)
        if self.draft is not None:
            self.draft._use_prefix(prefix, should_stop)
            self.draft._decode_prompt(tokens, should_stop)
        prompted = time.perf_counter()
        threads = self.generation_threads()
        stats = speculation.Stats()
        self._set_generation_threads(threads)
        checked = self._checked_grammar(grammar)
        try:
            generation = self._sample(checked, tokens, max_tokens, should_stop, finish, stats)
        finally:
            for runner in (self, self.draft):
                if runner is not None:
                    runner._ctx.set_n_threads(runner.n_threads, runner.n_threads)
        timing = Timing(
            prefixed - started,
            decoded,
            prompted - prefixed,
            generation.generated_tokens,
            time.perf_counter() - prompted,
            threads,
            stats if self.draft is not None else None,
            checked.kept,
            checked.masked,
        )
        self.timings.append(timing)
        log.debug("local model generation: %s", timing.summary())
        return generation

    def _set_generation_threads(self, threads: int) -> None:
        """Generation's batches (speculation's checks, the draft's catching up) run on
        generation's threads too; the prompt's on every thread."""
        for runner in (self, self.draft):
            if runner is not None:
                runner._ctx.set_n_threads(threads, threads)

    def generation_threads(self) -> int:
        """Every thread, or one when the machine is busier than its cores (see above)."""
        return 1 if self._load_average() > self.n_threads + 0.5 else self.n_threads

    def _grammar(self, schema: dict[str, Any]) -> str:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = schema_to_gbnf(schema)
        return self._grammars[key]

    def _checked_grammar(self, grammar: str) -> local_grammar.CheckedGrammar:
        """The grammar's state at the start of a generation (llama.cpp's and ours)."""
        llama = self._llama
        sampler = llama.LlamaSampler(llama.LlamaSamplerChainParams())
        sampler.add_grammar(self._vocab, grammar, "root")
        sampler.add_greedy()
        if grammar not in self._matchers:
            self._matchers[grammar] = local_grammar.Matcher(local_grammar.parse(grammar))
        matcher = self._matchers[grammar]
        check = local_grammar.Check(matcher, matcher.start)
        return local_grammar.CheckedGrammar(
            sampler, self._plain, self._piece, check, self.grammar_check
        )

    def _piece(self, token: int) -> str | None:
        """A token's text as llama.cpp's grammar reads it; None for tokens it treats
        apart (end of generation, control, user-defined, unused)."""
        if token not in self._pieces:
            normal = self._vocab.get_attr(token) == NORMAL and not self._vocab.is_eog(token)
            self._pieces[token] = self._vocab.token_to_piece(token, 0, True) if normal else None
        return self._pieces[token]

    def _tokenize(self, text: str) -> list[int]:
        return list(self._vocab.tokenize(text, add_special=False, parse_special=True))

    def _decode(self, tokens: list[int], should_stop: Callable[[], bool], total: int) -> None:
        """Decode `tokens` after the cached ones, checking `should_stop` between chunks."""
        for start in range(0, len(tokens), DECODE_CHUNK):
            if should_stop():
                raise Stopped(total, 0)
            chunk = tokens[start : start + DECODE_CHUNK]
            self._ctx.decode(self._llama.llama_batch_get_one(chunk, len(self._cached)))
            self._cached.extend(chunk)

    def _use_prefix(self, prefix: str, should_stop: Callable[[], bool]) -> list[int]:
        """Make the KV cache start with the prefix: kept, restored, or decoded (and saved)."""
        key = hashlib.sha256(prefix.encode()).hexdigest()
        saved = self._prefixes.get(key)
        tokens = saved[0] if saved else self._tokenize(prefix)
        if self._cached[: len(tokens)] == tokens:
            return tokens
        self._ctx.kv_cache_clear()
        self._cached = []
        if saved is not None:
            self._ctx.set_state_seq_data(saved[1], 0)
            self._cached = list(tokens)
            return tokens
        try:
            self._decode(tokens, should_stop, len(tokens))
        except Stopped:
            self._ctx.kv_cache_clear()
            self._cached = []
            raise
        self._prefixes[key] = (tokens, self._ctx.get_state_seq_data(0))
        return tokens

    def _decode_prompt(self, tokens: list[int], should_stop: Callable[[], bool]) -> int:
        """Keep the longest cached run the prompt starts with (at least one token is
        decoded: sampling needs the logits of the prompt's last token), decode the rest;
        how many were decoded."""
        keep = 0
        for cached, token in zip(self._cached, tokens[:-1], strict=False):
            if cached != token:
                break
            keep += 1
        self._ctx.memory_seq_rm(0, keep, -1)
        del self._cached[keep:]
        self._decode(tokens[keep:], should_stop, len(tokens))
        return len(tokens) - keep

    def _sample(
        self,
        grammar: local_grammar.CheckedGrammar,
        prompt: list[int],
        max_tokens: int,
        should_stop: Callable[[], bool],
        finish: Finish | None,
        stats: speculation.Stats,
    ) -> Generation:
        """Greedy decoding under the grammar: speculative with a draft model, else plain."""
        answer = speculation.Answer(max_tokens, self._vocab.is_eog, self._text, finish)
        target = _Side(self)
        try:
            if self.draft is None:
                speculation.greedy(target, grammar, answer, should_stop)
            else:
                drafter = speculation.DraftModel(_Side(self.draft), prompt, self._vocab.is_eog)
                speculation.speculative(
                    target, drafter, grammar, answer, should_stop, self.draft_tokens, stats
                )
        except speculation.Stopped as stopped:
            raise Stopped(len(prompt), stopped.generated) from None
        text = answer.final if answer.final is not None else self._text(answer.tokens)
        return Generation(text, len(prompt), len(answer.tokens), answer.finished)

    def _text(self, tokens: Sequence[int]) -> str:
        return self._vocab.detokenize(tokens, False, False) if tokens else ""


class _Side:
    """A runner's context (sequence 0) as `local_speculation` sees a model."""

    def __init__(self, runner: LlamaRunner) -> None:
        self._runner = runner

    @property
    def length(self) -> int:
        return len(self._runner._cached)

    def feed(self, tokens: Sequence[int]) -> None:
        runner = self._runner
        start = len(runner._cached)
        if len(tokens) == 1:
            batch = runner._llama.llama_batch_get_one(list(tokens), start)
        else:
            batch = runner._llama.LlamaBatch(n_tokens=len(tokens), embd=0, n_seq_max=1)
            for i, token in enumerate(tokens):
                batch.add(token, start + i, [0], True)
        runner._ctx.decode(batch)
        runner._cached.extend(tokens)

    def cut(self, length: int) -> None:
        runner = self._runner
        if length < len(runner._cached):
            runner._ctx.memory_seq_rm(0, length, -1)
            del runner._cached[length:]

    def pick(self, row: int, grammar: Any) -> int:
        token: int = grammar.pick(self._runner._ctx, row)
        return token
