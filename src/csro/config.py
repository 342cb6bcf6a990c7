"""The run configuration of ``csro run``: YAML in, validated pydantic models out.

The shape follows the CSRO loop of Hennes et al. (arXiv 2603.10098): ``iterations`` is the
paper's K (20 there), ``oracle.max_refinements`` its M (10 there), ``oracle.context`` its
opponent conditioning (code / description / both; all / top-k with k = 5 / minimum support,
whose threshold the paper does not give: 0.05 is our choice). Every other field is ours and
its default is what we found to work on a 2-core machine with the embedded model.

Unknown keys are errors (a typo must not silently fall back to a default). A bad value
raises ``ConfigError`` with one line naming the field, e.g.
``config field oracle.max_refinements: Input should be greater than or equal to 0``.
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any, Literal, Sequence

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from csro.errors import ConfigError
from csro.registry import ORACLES, PROVIDERS

if TYPE_CHECKING:
    from csro.policies import SandboxLimits


class Section(BaseModel):
    """A configuration section: unknown keys refused, frozen (the base of every csro config)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RunRoot(Section):
    """The root of a run's configuration, whatever its kind (``csro run CONFIG``).

    ``kind`` names the application the configuration starts (``csro.runkinds``); each root
    narrows it to its own name, which is also the default, and the run's store keeps it.
    """

    kind: str

    def to_dict(self) -> dict[str, Any]:
        """As stored in the run's store (JSON types)."""
        return self.model_dump(mode="json")


class ContextConfig(Section):
    """What the oracle's prompt says about the opponents (the paper's opponent conditioning)."""

    opponents: Literal["code", "description", "both"] = Field(
        "code", description="show sigma's support as raw code, as an LLM-written description "
                            "(a separate, cached call), or both")
    filter: Literal["all", "top_k", "min_support"] = Field(
        "top_k", description="which policies of sigma's support to show")
    k: int = Field(5, ge=1, description="top_k: how many, by sigma weight (5 worked best in the paper)")
    min_support: float = Field(0.05, gt=0, le=1, description="min_support: the weight threshold")
    self_explain: bool = Field(True, description="ask for a docstring and comments describing the strategy")


class EvolveConfig(Section):
    """The evolutionary search (``oracle.kind: evolve``; also discovery runs, ``kind: discover``): AlphaEvolve-style.

    Sizes are ours for a 2-core machine; the papers do not give AlphaEvolve's."""

    islands: int = Field(2, ge=1, le=16, description="islands evolving apart, exchanging their best every migration_interval generations")
    population_size: int = Field(2, ge=1, le=64, description="programs written per island per generation (LLM calls in one batch)")
    generations: int = Field(2, ge=1, description="generations per oracle call (per PSRO iteration)")
    diff_ratio: float = Field(0.5, ge=0, le=1, description="share of mutations asked as SEARCH/REPLACE diffs; the rest are full rewrites")
    migration_interval: int = Field(2, ge=1, description="generations between migrations (best of island i to island i+1)")
    inspirations: int = Field(1, ge=0, le=8, description="other elites shown in a prompt beside the parent")
    exploit: float = Field(0.7, ge=0, le=1, description="probability a parent comes from a tournament among elites (else a uniform cell)")
    length_bins: list[int] = Field([20, 40, 80], description="code-length feature: line-count edges of the archive's cells")
    quick_matches: int = Field(1, ge=1, description="cascade stage 2: matches per opponent before the full evaluation")
    cascade_quantile: float = Field(0.5, ge=0, le=1, description="stage 2 passes at or above this quantile of the island's elite fitness")
    max_llm_calls: int | None = Field(None, ge=1, description="budget: LLM calls per oracle call (None: generations x islands x population_size)")
    max_evaluations: int | None = Field(None, ge=1, description="budget: full evaluations per oracle call")
    wall_seconds: float | None = Field(None, gt=0, description="budget: wall time per oracle call (a resumed run's clock restarts)")
    repairs: int = Field(0, ge=0, le=4, description="times a mutation that fails its check is sent back with its error, "
                         "as the oracles' repairs (0: never, as in AlphaEvolve)")
    overlap: bool = Field(True, description="evaluate a generation while the LLM writes the next (parents then come from two generations back)")
    rewrite_grammar: bool = Field(True, description="full rewrites decoded under the problem's grammar where the provider "
                                  "honours one (embedded); false: free rewrites, started with the prompt's prefill")
    grammar_temperature: float | None = Field(
        1.3, ge=0, le=2, description="sampling temperature of rewrites decoded under the grammar, which keeps any sample "
        "valid (at llm.temperature 0.8 most samples were one program; docs/llm.md); null: llm.temperature")

    @field_validator("length_bins")
    @classmethod
    def _increasing(cls, v: list[int]) -> list[int]:
        if not v or any(b <= a for a, b in zip(v, v[1:])) or v[0] < 1:
            raise ValueError("must be a non-empty, strictly increasing list of positive line counts")
        return v


class OracleConfig(Section):
    """The best-response oracle: how policies are written and improved."""

    kind: str = Field(
        "linear_refinement", description="a row of csro.registry.ORACLES: zero_shot: one proposal per iteration; "
        "linear_refinement: refine while u < 0 and j < M; reflect: act-observe-rewrite; "
        "evolve: evolutionary search (oracle.evolve); no_model: the game's example policy, no LLM call (a baseline); "
        "grammar_search: evolve's search with every rewrite drawn from the game's grammar, no LLM call (a baseline)")
    max_refinements: int = Field(10, ge=0, description="M: refinement (or reflection) rounds at most")
    context: ContextConfig = ContextConfig()
    samples: int = Field(1, ge=1, le=16, description="programs drawn per proposal; the best valid one is kept")
    max_repairs: int = Field(2, ge=0, description="times a program that fails its check is sent back with the error")
    prompt: Literal["prefill", "scaffold", "plain"] = Field(
        "prefill", description="prefill: the reply is started with the class header; scaffold: "
        "started deeper, inside __init__ with a history list set up; plain: the request only")
    example: bool = Field(False, description="show the game's worked example policy in the prompt "
                          "(any style; a simple policy that uses the observations, to be bettered)")
    grammar_fallback: bool = Field(True, description="after failed repairs, one grammar-constrained sample (embedded only)")
    max_tokens: int = Field(1024, ge=64, description="completion budget of one call")
    evolve: EvolveConfig = EvolveConfig()

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        return ORACLES.check(v)


class BudgetLimits(Section):
    """Hard caps on LLM spending (None: no cap). A call whose worst case would pass one is not made."""

    usd: float | None = Field(None, gt=0, description="US dollars (needs a known price: the table or llm.prices)")
    tokens: int | None = Field(None, ge=1, description="prompt plus completion tokens")
    calls: int | None = Field(None, ge=1, description="calls made (replayed calls count too)")


# The roles of LLM calls, which a budget may cap one by one (``csro.llm.roles`` reads a call's
# role from its step).
ROLES = ("description", "proposal", "repair", "refinement", "fallback", "diagnosis", "rewrite", "mutation", "other")


class BudgetConfig(BudgetLimits):
    """The run's LLM budget, and optional caps per call role (see docs/cost.md)."""

    roles: dict[str, BudgetLimits] = Field({}, description=f"caps per role: {', '.join(ROLES)}")

    @field_validator("roles")
    @classmethod
    def _known_roles(cls, v: dict[str, BudgetLimits]) -> dict[str, BudgetLimits]:
        unknown = sorted(set(v) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown role {unknown[0]!r}; known: {', '.join(ROLES)}")
        return v


class PricesConfig(Section):
    """A model's price in US dollars per million tokens, overriding csro's table."""

    input: float = Field(..., ge=0, description="prompt tokens")
    output: float = Field(..., ge=0, description="completion tokens")
    cached_input: float | None = Field(None, ge=0, description="prompt tokens read from the cache (None: input)")
    cache_write: float | None = Field(None, ge=0, description="prompt tokens written to the cache (None: input)")


class LLMConfig(Section):
    """The LLM provider. API keys are read from the environment variable named here, never stored."""

    provider: str = Field(
        "embedded", description="a row of csro.registry.PROVIDERS: embedded (llama.cpp in-process, offline; the "
        "default), openai, gemini, anthropic, files, replay")
    model: str | None = Field("qwen2.5-coder-1.5b", description="provider-specific model name")
    path: str | None = Field(None, description="files: the folder of replies; replay: the earlier run's DIR")
    base_url: str | None = Field(None, description="openai/gemini/anthropic: the server's base URL")
    api_key_env: str | None = Field(None, description="the environment variable holding the API key")
    temperature: float = Field(0.8, ge=0, le=2, description="sampling temperature of every call")
    model_sampling: bool = Field(False, description="embedded: sample with the top-p, top-k and repetition penalty "
                                 "the model's authors publish for it (csro.llm.models) instead of llama.cpp's "
                                 "defaults (docs/oracles.md)")
    concurrency: int = Field(2, ge=1, le=64, description="LLM calls in flight at once")
    timeout_s: float = Field(300.0, gt=0, description="one attempt's time limit")
    retry_budget_s: float = Field(300.0, gt=0, description="how long one call may go on failing transiently (429, "
                                  "5xx, overload, timeouts, dropped connections, malformed replies) before the run "
                                  "stops, resumably (exit 4; docs/llm.md)")
    retries: int | None = Field(None, ge=0, description="the most retries of one call (None: as many as "
                                "retry_budget_s allows)")
    backoff_s: float = Field(1.0, ge=0, description="the first retry's wait (doubled each time up to 60 s, jittered; "
                             "a longer Retry-After from the server wins)")
    threads: int | None = Field(None, ge=1, description="embedded: llama.cpp threads (None: 1, safe when another job holds a core; "
                                 "2 is faster on an idle machine, docs/llm.md)")
    prices: PricesConfig | None = Field(None, description="the model's price (None: csro's dated table, "
                                                          "docs/cost.md)")
    budget: BudgetConfig = Field(BudgetConfig(), description="hard caps on LLM spending; see docs/cost.md")
    prompt_cache: bool = Field(True, description="anthropic: cache_control on the stable prefix; gemini: "
                                                 "a cachedContents entry for it (openai caches prefixes itself)")

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, v: str) -> str:
        return PROVIDERS.check(v)

    @field_validator("path")
    @classmethod
    def _no_empty_path(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must be a non-empty path or null")
        return v


class EvaluationConfig(Section):
    """Evaluation of the sigma-mixture against the game's evaluation population."""

    population: str | list[str] = Field(
        "default", description="default: the game's population (the 43 RoShamBo bots, Leduc's "
                               "CFR+/AlwaysCall/AlwaysFold); another of the game's named populations (rrps: "
                               "bots-training, bots-heldout, the tuning split); or a list of policy references")
    matches_per_opponent: int = Field(10, ge=1, description="matches of each sigma member against each population member")
    every_iteration: bool = Field(True, description="score sigma after every iteration (each policy's "
                                                    "row is played once), for the metrics over iterations")
    exact_nash_conv: bool = Field(True, description="the exact NashConv of the final mixture where the game allows it")
    nash_conv_every_iteration: bool = Field(False, description="also the exact NashConv of sigma after every iteration "
                                            "(small games only: it reads every information state)")
    br_estimate: bool = Field(False, description="one more oracle best response against the final sigma (iteration "
                              "K+1, not added): its utility is a lower bound on sigma's exploitability within code "
                              "space (off by default so runs recorded before it resume identically)")


class MetaGameConfig(Section):
    """How the population's payoff cells are sized, and how sigma's stability is measured (see
    csro.metagame): a cell estimated from too few matches lets noise pick sigma."""

    ci_width: float | None = Field(None, gt=0, description="play more matches for a population cell until its 95% "
                                   "confidence interval is at most this wide (match-return units); None: exactly "
                                   "matches_per_cell")
    max_matches: int = Field(64, ge=1, description="with ci_width: the most matches a population cell gets")
    resamples: int = Field(0, ge=0, description="after each meta-solve, re-solve this many resampled payoff tables "
                           "and record how often sigma's support changes (0: off)")
    select: Literal["solver", "strongest"] = Field(
        "solver", description="solver: sigma is the meta-solver's; strongest: among the mixtures no member beats by "
        "more than its cells' 95% CI, the one with the highest mean return against the population (symmetric "
        "games; csro.metagame.strongest_plausible)")


class ExecutionConfig(Section):
    """Where matches run. The result does not depend on it."""

    backend: Literal["local", "ray"] = Field("local", description="local: a process pool here; ray: one Ray task per chunk of matches")
    address: str | None = Field(None, description="ray: the cluster address (None: start a local instance)")
    processes: int | None = Field(None, ge=1, description="local: pool size (None: the CPU count)")
    chunk_matches: int | None = Field(None, ge=1, description="matches a runner process plays together (None: "
                                      "the runner's default); speed only, the results do not depend on it")


class SandboxConfig(Section):
    """Limits of each sandboxed policy worker (see docs/sandbox.md)."""

    memory_mb: int = Field(1024, ge=64, description="address-space limit of a policy's worker process")
    call_seconds: float = Field(5.0, gt=0, description="wall-clock limit of one batched call to a policy")
    match_seconds: float = Field(60.0, gt=0, description="wall-clock limit of a policy's calls summed over one match")
    cpu_seconds: int = Field(120, ge=1, description="CPU-time limit of a policy's worker process")
    allow_missing: list[Literal["namespaces", "landlock", "seccomp"]] = Field(
        [], description="kernel layers untrusted code may run without where this machine lacks them "
                        "(default none: it does not run; `csro sandbox check` shows what the machine gives)")
    isolate_matches: bool = Field(False, description="a worker process per match, so that no policy carries what it "
                                  "saw from one match to another (about ten times the CPU of batched RRPS "
                                  "matches: docs/sandbox.md)")

    def limits(self) -> SandboxLimits:
        """The worker limits this section sets."""
        from csro.policies import SandboxLimits

        return SandboxLimits(memory_mb=self.memory_mb, cpu_seconds=self.cpu_seconds,
                             call_seconds=self.call_seconds, match_seconds=self.match_seconds,
                             allow_missing=tuple(self.allow_missing), isolate_matches=self.isolate_matches)


class RunConfig(RunRoot):
    """One CSRO run (Algorithm 1 of the paper, with our defaults)."""

    kind: Literal["csro"] = Field("csro", description="the kind of run: csro (the default), discover, aor, train or reproduce")
    game: str = Field("rrps", description="rrps | leduc | any OpenSpiel game string")
    iterations: int = Field(20, ge=1, description="K: PSRO iterations")
    seed: int = Field(0, ge=0, description="fixes every LLM sampling seed, and with the run's secret (drawn at its "
                                           "start, kept in its store) every match seed")
    initial_policy: str = Field("builtin:random", description="builtin:NAME or a policy file")
    matches_per_cell: int = Field(4, ge=1, description="matches per payoff-table cell (and per candidate evaluation)")
    meta_solver: str = Field("nash", description="any meta-solver of csro.solvers.meta")
    meta_game: MetaGameConfig = MetaGameConfig()
    oracle: OracleConfig = OracleConfig()
    llm: LLMConfig = LLMConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    execution: ExecutionConfig = ExecutionConfig()
    sandbox: SandboxConfig = SandboxConfig()

    @field_validator("meta_solver")
    @classmethod
    def _known_solver(cls, v: str) -> str:
        from csro.solvers.meta import META_SOLVERS

        if v not in META_SOLVERS:
            raise ValueError(f"unknown meta-solver {v!r}; known: {', '.join(sorted(META_SOLVERS))}")
        return v

    @field_validator("game")
    @classmethod
    def _non_empty_game(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must name a game")
        return v.strip()

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


def documented_yaml(config: RunRoot | None = None) -> str:
    """``config`` (default: the defaults) as YAML with every field's description as a comment."""
    config = config or RunConfig()
    lines: list[str] = []

    def walk(model: BaseModel, indent: str) -> None:
        for name, field in type(model).model_fields.items():
            value = getattr(model, name)
            note = f"  # {field.description}" if field.description else ""
            if isinstance(value, BaseModel):
                lines.append(f"{indent}{name}:{note}")
                walk(value, indent + "  ")
            else:
                dumped = yaml.safe_dump({name: value}, default_flow_style=True, width=10_000).strip()[1:-1]
                lines.append(f"{indent}{dumped}{note}")

    walk(config, "")
    return "\n".join(lines) + "\n"


def _first_error(exc: pydantic.ValidationError) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "(top level)"
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    more = len(exc.errors()) - 1
    return f"config field {field}: {msg}" + (f" (and {more} more)" if more else "")


def parse_model(model: type[BaseModel], data: Any):
    """Validate a mapping (as loaded from YAML) into ``model``; ConfigError naming the field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config must be a mapping of fields, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(_first_error(exc)) from None


def parse_config(data: Any) -> RunConfig:
    """Validate a mapping (as loaded from YAML) into a ``RunConfig``."""
    return parse_model(RunConfig, data)


def apply_overrides(data: dict, overrides: Sequence[str]) -> dict:
    """``key.path=value`` overrides (value parsed as YAML) applied to a copy of ``data``."""
    out = yaml.safe_load(yaml.safe_dump(data)) or {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key.path=value, got {item!r}")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        node = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set {key}: {part!r} is not a section")
            node = child
        node[parts[-1]] = value
    return out


def read_yaml(path: str | pathlib.Path, overrides: Sequence[str] = ()) -> dict:
    """The mapping of a YAML config file, with ``--set`` overrides applied (not yet validated)."""
    p = pathlib.Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {p}: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"config file {p} is not valid YAML{where}") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of fields")
    return apply_overrides(data or {}, overrides)


def load_config(path: str | pathlib.Path, overrides: Sequence[str] = ()) -> RunConfig:
    """Read, override and validate a CSRO config file."""
    return parse_config(read_yaml(path, overrides))
