"""TokenSpeed (LightSeek's `tokenspeed`, package `tokenspeed`): where its code lives, how it is
launched, and how it loads an EAGLE-3 draft (paths relative to site-packages; tokenspeed 0.1.1
from the registry, its only release, a pure-Python wheel).

Not a fork by distribution: its package is its own (`tokenspeed/runtime/...`, no `sglang`
package inside), its server and flags are its own. Its draft-model code follows SGLang's design
(THIRDPARTYNOTICES names SGLang and vLLM among the projects it is "based on or inspired by"):
the model file's `EntryClass` registers a class by its name (runtime/models/registry.py:
101-131), the EAGLE-3 head is `LlamaForCausalLMEagle3` (runtime/models/llama_eagle3.py:544,
:716) and keeps `hot_token_id`; its rules are written here from its own code, not SGLang's.

Launch: `tokenspeed serve MODEL ...` or `ts serve MODEL ...` (console scripts, entry_points.txt
:2-3; cli/__main__.py:61-62; a leading positional is the model, cli/_argsplit.py:226). The
orchestrator spawns the engine, `python -m smg_grpc_servicer.tokenspeed --host H --port P ...`
(cli/_proc.py:35, :39-60), and the smg gateway, `python -m smg launch` (cli/_proc.py:34), which
serves HTTP on --port, 8000 by default (cli/serve_smg.py:66). Speculative flags
(runtime/utils/server_args.py:2749-2792): --speculative-algorithm (EAGLE3, MTP, DFLASH, DSPARK,
case as written: drafter/__init__.py:51, :161), --speculative-draft-model-path,
--speculative-num-steps (3), --speculative-eagle-topk (1), --speculative-num-draft-tokens (steps
+ 1: server_args.py:495-496, :749-750), or --speculative-config JSON whose method is upper-cased
and fills what the flags leave out (server_args.py:694-736).

Draft architecture: a draft config's architectures[0] that names none of NextN, MTP, Eagle,
DFlash, DSpark gets "NextN" appended (runtime/utils/hf_transformers_utils.py:460-475), then is
looked up among the EntryClass names (models/registry.py:86-96), and one none registers raises
ValueError('Model architectures [...] are not supported for now') at start (:57-60). So the
EAGLE authors' spelling `LlamaForCausalLM` (which LMDeploy requires) becomes
`LlamaForCausalLMNextN`, registered by no model: TokenSpeed's commonest draft failure.

d2t: offsets; the loader adds arange to it (llama_eagle3.py:648-652; the MLA head
deepseek_v3.py:2746-2750) and the drafter maps draft ids through the result (execution/drafter/
eagle.py:130-133, :267).

Aux layers: the target's set_eagle3_layers_to_capture (the capture methods remotedbg follows in
the target's code) with the draft config's eagle_aux_hidden_state_layer_ids, or
--eagle3-layers-to-capture (execution/factory.py:192-200); without them (2, L // 2, L - 3)
(models/base/causal_lm.py:271-282).

Acceptance: the decode log line `Decode batch. ... avg_accept_len: 2.31, accept_rate: 0.44`
(runtime/engine/batch_log.py:189-200; avg_accept_len is generated tokens per verify step, the
bonus included) and the counters tokenspeed:spec_decode_num_drafts, _num_draft_tokens,
_num_accepted_tokens (the bonus token excluded: runtime/metrics/collector.py:227-246).
"""

from __future__ import annotations

from remotedbg.engines.draft_fit_rules import release
from remotedbg.engines.profile import EngineProfile

#: words that keep a draft architecture's name as given (hf_transformers_utils.py:463-467)
KEEPS_NAME = ("NextN", "MTP", "Eagle", "DFlash", "DSpark")
#: the suffix any other draft architecture gets (:475), and DSPARK's for DeepSeek-V4 (:469-473)
RENAME_SUFFIX = "NextN"
DSPARK_TARGETS = ("DeepseekV4ForCausalLM", "DeepseekV41ForCausalLM")
#: the EAGLE-3 head's architecture, its EntryClass (llama_eagle3.py:716)
EAGLE3_HEAD = "LlamaForCausalLMEagle3"
#: its algorithms, as written (execution/drafter/__init__.py:51)
IN_TREE_ALGORITHMS = ("EAGLE3", "MTP", "DFLASH", "DSPARK")
#: the release its rules were read from
READ = (0, 1, 1)


class TokenSpeedProfile(EngineProfile):
    name = "tokenspeed"
    label = "TokenSpeed"
    scan = {
        "package": "tokenspeed",
        "package_markers": ["runtime"],
        "models_dir": "runtime/models",
        "fallback_models": [],
        "worker_dirs": ["runtime/execution/drafter"],
        # the registry is every model file's EntryClass (models/registry.py:101-131)
        "registry_file": None,
        "version_files": ["version.py"],  # __version__ = "0.1.1" (tokenspeed/version.py:21)
        "name_excludes": [],
        "dist_names": ["tokenspeed"],
        "process_patterns": [
            r"\btokenspeed\s+serve\b",
            r"(?:^|/)ts\s+serve\b",
            r"/bin/tokenspeed\b",
            r"-m\s+tokenspeed\b",
            r"\bsmg_grpc_servicer\.tokenspeed\b",
        ],
    }

    speculation_flag = "--speculative-algorithm"
    algorithm_flag = "--speculative-algorithm"
    draft_flag = "--speculative-draft-model-path"
    context_arg = "max-model-len"
    overrides_arg = "hf-overrides"

    served_families = {"EAGLE3": "eagle3", "MTP": "mtp"}
    launch_algorithms = {"eagle3": "EAGLE3", "mtp": "MTP"}
    families_served_by = {"eagle3": frozenset({"eagle3"}), "mtp": frozenset({"mtp"}),
                          "eagle": frozenset()}  # fmt: skip
    registers_draft_architectures = True
    registry_is_entry_classes = True
    reads_context_rules = False  # its context-length rules were not read
    # the EAGLE-3 head counts accepted drafts (collector.py:227-246)
    counts_accepted_drafts = True

    # a tied draft head is its embedding module (llama_eagle3.py:567-573), which the target's
    # embedding fills (set_embed_and_head, :684-708)
    tied_head_is_the_embedding = True

    def tied_head_outcome(self, version: str | None) -> str | None:
        """Logits over the whole vocabulary from the target's embedding, whose ids then index the
        draft_vocab_size-long hot_token_id (execution/drafter/eagle.py:267): out of range."""
        return "runtime-error"

    def served_family(self, algorithm: str | None) -> str | None:
        """Names are compared as written: `eagle3` is no algorithm it knows (ValueError 'unknown
        --speculative-algorithm', drafter/__init__.py:149-163)."""
        return self.served_families.get(str(algorithm or "").strip()) if algorithm else None

    def refuses_algorithm(self, algorithm: str | None, version: str | None = None
                          ) -> tuple[str, str] | None:  # fmt: skip
        """An in-tree name in another case (`eagle3`, as vLLM and LMDeploy spell it): TokenSpeed
        compares names as written and stops at start."""
        name = str(algorithm or "").strip()
        if name.upper() not in IN_TREE_ALGORITHMS or name in IN_TREE_ALGORITHMS:
            return None
        return (
            f"TokenSpeed has no algorithm {name!r}: it is spelled {name.upper()}",
            f"TokenSpeed compares --speculative-algorithm as written against its algorithms "
            f"{', '.join(IN_TREE_ALGORITHMS)} (tokenspeed/runtime/execution/drafter/__init__.py:"
            f"51) and stops at start with ValueError(\"unknown --speculative-algorithm "
            f"'{name}'\") (:149-163). Use --speculative-algorithm {name.upper()}.",
        )

    def served_architectures(self, architectures: list[str], method: str | None) -> list[str]:
        archs = list(architectures)
        if archs and not any(word in archs[0] for word in KEEPS_NAME):
            if str(method or "") == "DSPARK" and archs[0] in DSPARK_TARGETS:
                archs[0] += "DSpark"
            else:
                archs[0] += RENAME_SUFFIX
        return archs

    def unregistered_draft(self, served: list[str], given: list) -> tuple[str, str]:
        renamed = bool(given) and served[:1] != list(given[:1])
        how = (f"appends NextN to an architecture that names no draft kind "
               f"(tokenspeed/runtime/utils/hf_transformers_utils.py:460-475), so it looks up "
               f"{served}" if renamed else f"looks {served} up")  # fmt: skip
        return (
            f"TokenSpeed has no draft class for {given}",
            f"The draft config names {given}; TokenSpeed {how} among its models' EntryClass "
            "names (runtime/models/registry.py:86-96), where none is registered: the server "
            "stops at start with ValueError('Model architectures [...] are not supported for "
            f"now') (registry.py:57-60). Its EAGLE-3 head is {EAGLE3_HEAD} "
            f"(runtime/models/llama_eagle3.py:716): set the draft config's architectures to "
            f"[\"{EAGLE3_HEAD}\"] (SpecForge's spelling).",
        )

    def served_context_length(self, config: dict, version: str | None) -> int | None:
        return None  # not read for this release

    def draft_context_length(self, config: dict) -> int | None:
        return None

    def draft_settings_refused(
        self, version: str | None, steps: int, topk: int | None, tokens: int | None
    ) -> tuple[str, str] | None:
        """EAGLE3's chain (topk 1, its default: server_args.py:496) verifies steps + 1 tokens and
        any other --speculative-num-draft-tokens raises ValueError at start (:1165-1175), where
        SGLang corrects it; trees (topk > 1) are checked by :1180-1205, not modelled here."""
        if not release(version) or release(version)[:2] != READ[:2]:
            return None
        if (topk or 1) != 1 or tokens is None or tokens == steps + 1:
            return None
        return (
            f"{tokens} draft tokens with topk 1: TokenSpeed refuses to start",
            f"TokenSpeed verifies a draft chain of --speculative-num-steps + 1 = {steps + 1} "
            "tokens and raises ValueError('a draft chain verifies speculative_num_steps + 1 = "
            f"{steps + 1} tokens, got speculative_num_draft_tokens={tokens}') at start "
            "(tokenspeed/runtime/utils/server_args.py:1165-1175). Pass "
            f"--speculative-num-draft-tokens {steps + 1}, or leave it out.",
        )

    def auto_draft_settings(
        self, version: str | None, target_arch: str | None, algorithm: str | None = None
    ) -> tuple[int, int, int] | None:
        """Steps 3, topk 1, steps + 1 draft tokens for every target (server_args.py:495-496,
        :749-750), in the release read."""
        v = release(version)
        return (3, 1, 4) if v and v[:2] == READ[:2] else None


TOKENSPEED = TokenSpeedProfile()
