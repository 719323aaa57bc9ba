"""Every finding id remotedbg reports: what it means, the engine code it rests on, how to fix it,
and an example. `remotedbg explain ID` prints an entry; docs/findings.md is generated from this
table (tests/test_finding_catalog.py regenerates it and compares, and checks that every id the
code can report has an entry), so the catalog cannot drift from the checks.

Per-release cites (file:line) live with the rules themselves (engines/sglang.py, engines/vllm.py,
the conformance tables); an entry names the engine files its rule reads.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class FindingEntry:
    id: str
    #: the severities it is reported with ('error', 'warning', 'info'), strongest first
    severities: tuple[str, ...]
    #: which command reports it
    reported_by: str
    meaning: str
    rests_on: str
    fix: str
    example: str


VOCAB = "playbook vocab-audit, spec-audit, diagnose"
SPEC = "playbook spec-audit, diagnose"
LIVE = "probe, diagnose (with its probe), logs"

_ENTRIES = (
    FindingEntry(
        "d2t-missing", ("error",), VOCAB,
        "The draft's vocabulary is smaller than the target's, but the checkpoint has no `d2t` "
        "tensor: nothing tells the engine which target token each draft id stands for, so the "
        "draft's proposals are read as target ids 0..N-1 and almost none is accepted.",
        "The EAGLE-3 draft loaders turn `d2t` into the draft-to-target map: SGLang's "
        "srt/models/llama_eagle3.py (`hot_token_id`), vLLM's model_executor/models/"
        "llama_eagle3.py (`draft_id_to_target_id`, zeros when the checkpoint has none).",
        "Export `d2t` (and `t2d`) with the draft, from the vocabulary mapping the trainer built "
        "(SpecForge writes both), or train with the full vocabulary.",
        "draft_vocab_size 32000, target vocab 128256, and the safetensors hold no `d2t`.",
    ),
    FindingEntry(
        "d2t-absolute-ids", ("error",), VOCAB,
        "`d2t` holds target ids where the engines expect offsets (`target_id = draft_id + "
        "d2t[draft_id]`): every draft id lands on the wrong target token. `t2d` is the ground "
        "truth when present; without it a weaker heuristic says so.",
        "Every engine adds the offsets: SGLang `hot_token_id = d2t + arange(N)` in "
        "srt/models/llama_eagle3.py load_weights; vLLM `draft_id_to_target_id + arange` in "
        "model_executor/models/llama_eagle3.py compute_logits.",
        "Re-export the map as offsets: `d2t = target_ids - arange(len(target_ids))`.",
        "d2t[5] = 1234 where t2d says draft id 5 is target id 1234 (offset 1229 expected).",
    ),
    FindingEntry(
        "d2t-wrong-dtype", ("error",), VOCAB,
        "`d2t` is not an integer tensor, or `t2d` is not bool: the engines index with them as "
        "such, so the load fails or maps wrongly.",
        "The loaders copy `d2t` into an int64 parameter/buffer and `t2d` into a bool one "
        "(srt/models/llama_eagle3.py, model_executor/models/llama_eagle3.py).",
        "Save `d2t` as int64 and `t2d` as bool.",
        "d2t saved as float32 by a conversion script.",
    ),
    FindingEntry(
        "d2t-wrong-shape", ("error",), VOCAB,
        "`d2t` or `t2d` is not a vector: the engines index them once per id.",
        "Both engines read `d2t` as one offset per draft id and `t2d` as one flag per target id.",
        "Save `d2t` with shape [draft_vocab_size] and `t2d` with shape [target vocab].",
        "a d2t of shape [2, 16000].",
    ),
    FindingEntry(
        "d2t-out-of-range", ("error",), VOCAB,
        "`arange(N) + d2t` leaves the target vocabulary or repeats a target id: those draft "
        "ids index past the target's logits or two draft ids propose the same token.",
        "The engines add the offsets and index the target vocabulary with the result (see "
        "d2t-absolute-ids).",
        "Rebuild the map from the trainer's token list; each draft id maps to one distinct "
        "target id below the target's vocab size.",
        "d2t[31999] + 31999 = 163845 with a target vocab of 163840.",
    ),
    FindingEntry(
        "t2d-mismatch", ("error",), VOCAB,
        "`nonzero(t2d)` differs from `arange(N) + d2t` (count or ids): the two halves of the "
        "map were exported from different vocabularies.",
        "The engines use `d2t` to propose; `t2d` is what the trainer marked, so a disagreement "
        "means the served map is not the trained one.",
        "Export `d2t` and `t2d` together from the same training run.",
        "t2d marks 32000 ids, d2t maps to 31744 of them and 256 others.",
    ),
    FindingEntry(
        "draft-vocab-size-mismatch", ("error",), VOCAB,
        "The config's `draft_vocab_size` disagrees with the shapes of `d2t`, `t2d` or "
        "`lm_head`: the engine builds the head from the config and the load fails or truncates.",
        "The draft classes size `lm_head` and the d2t buffer from `draft_vocab_size` "
        "(srt/models/llama_eagle3.py, model_executor/models/llama_eagle3.py).",
        "Set `draft_vocab_size` in config.json to the length of `d2t` and rows of `lm_head`.",
        "config says 32000, lm_head.weight is [16000, 4096].",
    ),
    FindingEntry(
        "eos-not-in-draft-vocab", ("warning",), VOCAB,
        "The draft can propose none of the ids that end a turn (the target's `eos_token_id`s, "
        "else the draft config's): each turn's last draft is rejected. A draft whose `d2t` "
        "maps to, or whose `t2d` marks, one of them has no warning.",
        "Proposals come only from the draft vocabulary (the d2t map above).",
        "Keep the target's end-of-turn ids in the draft vocabulary when building it.",
        "Llama 3 ends turns with 128001, 128008 or 128009; none is in the draft's 32000 ids.",
    ),
    FindingEntry(
        "loader-direct-map", ("error",), VOCAB,
        "The checkpoint stores offsets, but the engine's loader uses `d2t` as target ids as is "
        "(a patched or forked loader): many draft ids collapse onto a few target ids.",
        "The draft loader's own code on the box, read by `locate-eagle` (how `hot_token_id` "
        "or `draft_id_to_target_id` is built from `d2t`).",
        "Add `arange(N)` in the loader as the released engines do, or serve a release whose "
        "loader does.",
        "hot_token_id = d2t in a locally edited llama_eagle3.py.",
    ),
    FindingEntry(
        "vocab-map-cleared", ("info",), "playbook vocab-audit",
        "Every vocabulary-map check passed; the entry lists the next things to look at.",
        "The checks above.",
        "Nothing to fix in the map: run `remotedbg diagnose` for the rest.",
        "d2t offsets, t2d agreeing, sizes consistent.",
    ),
    FindingEntry(
        "algorithm-mismatch", ("error",), SPEC,
        "The draft's family (EAGLE-3, EAGLE-1/2, MTP/NextN, Medusa, from its architectures, else "
        "its `fc` width) does not match the launch's algorithm: an EAGLE-3 head served as EAGLE "
        "or NEXTN, an MTP head served as EAGLE3. Also a method the release does not serve "
        "(vLLM 0.33.0 has no Medusa).",
        "SGLang's --speculative-algorithm and vLLM's speculative `method` pick the draft worker "
        "and model class (srt/speculative/spec_info.py; vllm/config speculative method).",
        "Launch with the algorithm the draft was trained for (EAGLE3 for an EAGLE-3 head).",
        "--speculative-algorithm EAGLE with a LlamaForCausalLMEagle3 draft.",
    ),
    FindingEntry(
        "target-unsupported", ("error",), SPEC,
        "The target model class has none of the capture methods the engine calls for EAGLE-3 "
        "(or the release has no class for the target's architecture): the server stops at start.",
        "SGLang calls `set_eagle3_layers_to_capture` on the target; vLLM checks "
        "`SupportsEagle3` (model_executor/models/interfaces.py).",
        "Serve a release whose target class supports EAGLE-3 capture, or another target.",
        "Qwen3 as the target on SGLang 0.4.6.post5.",
    ),
    FindingEntry(
        "draft-arch-unsupported", ("error",), SPEC,
        "The engine does not register the draft's architecture (as its config maps it), or "
        "cannot read the draft's config at all (FasterDecoding's Medusa config, which names no "
        "model_type, before vLLM 0.25.0; a medusa or mlp_speculator config on vLLM 0.33.0, "
        "which no longer registers those types): the server stops at start.",
        "vLLM's model registry (model_executor/models/registry.py) and its EAGLEConfig or "
        "speculators config mapping; SGLang's EntryClass of the draft model files.",
        "Name an architecture the release registers (e.g. LlamaForCausalLMEagle3 where the "
        "release maps it), or serve a release that registers it.",
        "SpecForge's `LlamaForCausalLMEagle3` on vLLM 0.10.1.1.",
    ),
    FindingEntry(
        "plugin-disabled", ("error",), SPEC,
        "The launch names an algorithm a plugin registers, but the plugin registers nothing on "
        "this install: its own check of the engine (a hook it needs is missing or differs) "
        "returns before any registration, so the engine does not know the algorithm and the "
        "server stops at start.",
        "The plugin's entry point and its gate, read without importing it (eagle-harness 0.1.3: "
        "sglang/plugin.py:33-34 returns unless every hook of sglang/hooks.py HOOKS is in the "
        "engine's code), and the engine's refusal of an unknown algorithm (SGLang 0.5.23 "
        "srt/speculative/spec_info.py:65).",
        "Serve it on an engine that carries the plugin's hooks (the versions the plugin names), "
        "or use an algorithm the engine itself has (EAGLE3).",
        "`--speculative-algorithm EAGLE_HARNESS` with eagle-harness 0.1.3 on SGLang 0.5.23.",
    ),
    FindingEntry(
        "aux-layers-mismatch", ("error", "warning"), SPEC,
        "The target layers whose hidden states are captured for the draft differ from the "
        "layers it was trained on (error with --var train_layers; warning against the ids the "
        "config records).",
        "The capture layer ids: SGLang's llama.py default [2, n//2, n-3] or the draft config's "
        "`eagle_aux_hidden_state_layer_ids`; vLLM's `get_eagle3_aux_hidden_state_layers`.",
        "Record the training layer ids in the draft config (`eagle_config."
        "eagle_aux_hidden_state_layer_ids`) where the release reads them, or serve with the "
        "capture the draft was trained with.",
        "trained on [1, 29, 57], served capturing [2, 30, 58].",
    ),
    FindingEntry(
        "aux-layers-ignored", ("warning",), SPEC,
        "The config records aux layer ids where this release does not read them, and they "
        "differ from what it captures.",
        "Whether the release's target model reads the draft config's aux layer ids.",
        "Serve a release that reads them, or train with the release's default capture.",
        "eagle_aux_hidden_state_layer_ids [1, 29, 57] on a release that always captures "
        "[2, 16, 29].",
    ),
    FindingEntry(
        "fc-shape-mismatch", ("error",), SPEC,
        "`fc.weight`'s input width is not the target hidden size times the captured layer "
        "count (a Medusa head's residual layers: not the target hidden size): the draft cannot "
        "take the hidden states it is fed.",
        "The EAGLE-3 draft's `fc` projects the concatenated captured states "
        "(srt/models/llama_eagle3.py, model_executor/models/llama_eagle3.py); vLLM's Medusa "
        "heads read the target's last hidden state (v1/spec_decode/medusa.py).",
        "Train the draft on this target (its hidden size) with the served capture.",
        "fc.weight [4096, 12288] with a 5120-wide target.",
    ),
    FindingEntry(
        "norm-flag-unsupported", ("error",), SPEC,
        "A norm flag the draft config sets that the draft class's code never reads, or a "
        "trained norm tensor its loader drops or refuses.",
        "The draft class's constructor and load_weights in the release.",
        "Train without the flag, or serve a release whose draft class builds that norm.",
        "`norm_before_residual: true` on a release that ignores it.",
    ),
    FindingEntry(
        "draft-load-fails", ("error",), SPEC,
        "The engine's loader raises on this checkpoint: the server stops at start. The finding "
        "names the tensor and the engine's file:line.",
        "The draft class's load_weights (and vLLM's AutoWeightsLoader) in the release.",
        "Rename or drop the tensor the loader refuses (a `model.` or `draft_model.` prefix on "
        "vLLM), or re-export with the engine's names.",
        "model.layers.0.self_attn.q_proj.weight in a draft for vLLM 0.10; an EAGLE-1 head's "
        "fc.bias for vLLM 0.8.5-0.24.0 (KeyError: fc is built bias=False).",
    ),
    FindingEntry(
        "required-weights-missing", ("error",), SPEC,
        "Parameters nothing in the checkpoint is loaded into: the draft serves with "
        "uninitialised weights. An EAGLE-1 draft's head is the target's where the engine's "
        "worker gives it, so a checkpoint without `lm_head` is normal there. vLLM builds one "
        "Medusa head per speculative token, so drafting more tokens than the checkpoint has "
        "heads leaves heads unfilled, which its loader refuses at start. An MTP launch on a "
        "target checkpoint exported without its MTP layer leaves the whole layer unfilled.",
        "The draft class's parameters against its load_weights; SGLang's set_embed_and_head "
        "(speculative worker), vLLM's lm_head sharing in its EAGLE proposer; the names each "
        "engine takes a target's MTP layer from (MTP_LAYER_PREFIXES).",
        "Export the missing tensors with the names the loader maps; keep the MTP layer in an "
        "exported target checkpoint, or start without MTP.",
        "no lm_head.weight in an EAGLE-3 draft.",
    ),
    FindingEntry(
        "capture-modified", ("error",), SPEC,
        "The served engine code differs from its release in what it feeds the draft: a capture "
        "added before the layer loop (the embedding output) or a layer output captured without "
        "the residual. The finding shows the engine's file:line and the hunk.",
        "The target model file on the deployment's path against the release's bytes (pip "
        "RECORD or git index), and what the trainer captures (SpecForge: the residual stream at "
        "each layer id).",
        "Restore the released file (reinstall the wheel, `git checkout` the file), or retrain "
        "the draft on the patched capture.",
        "deepseek_v2.py appending the embedding output to aux_hidden_states.",
    ),
    FindingEntry(
        "engine-code-modified", ("warning",), SPEC,
        "Another change from the release in a file on this deployment's speculative path "
        "(target model file, draft loader, speculative workers).",
        "The same comparison with the release as capture-modified.",
        "Check the hunk `locate-eagle` shows; reinstall the release if the change is not "
        "intended.",
        "an edited eagle_worker.py.",
    ),
    FindingEntry(
        "embedding-missing", ("error",), SPEC,
        "The draft's embedding is not in the checkpoint and the engine does not share the "
        "target's (or cannot: another hidden size).",
        "SGLang's set_embed / set_embed_and_head and vLLM's embedding sharing in the proposer.",
        "Export `embed_tokens.weight` with the draft.",
        "a draft with hidden size 2048 for a 4096-wide target and no embedding.",
    ),
    FindingEntry(
        "unexpected-weights", ("warning",), SPEC,
        "Tensors the loader skips that no parameter misses: trained weights that are not served. "
        "A bias on a layer the engine builds without one is among them: the served layer "
        "computes without what was trained.",
        "The draft class's load_weights, and how its __init__ builds each layer (`bias=False`); "
        "vLLM's AutoWeightsLoader ignores an unexpected `.bias` from 0.25.0 "
        "(model_executor/models/utils.py).",
        "Check the export's names; drop the tensors if they are not meant to be served. For a "
        "bias, serve with an engine that builds it (SGLang's EAGLE-1 head does) or retrain "
        "without it.",
        "an EAGLE-1 head's `fc.bias` on vLLM 0.25.0 or later (fc is built bias=False).",
    ),
    FindingEntry(
        "draft-scales-missing", ("error",), SPEC,
        "Quantized draft weights (FP8, INT8, packed 4-bit) without a `weight_scale` "
        "companion: no loader can turn the codes back into values.",
        "The engines' quantized linear layers need the scale tensors.",
        "Re-export in bf16, or with the scales.",
        "F8_E4M3 fc.weight and no fc.weight_scale.",
    ),
    FindingEntry(
        "draft-model-vocab", ("error",), SPEC,
        "A draft model of its own (vLLM's method `draft_model`, SGLang's `STANDALONE`) whose "
        "vocabulary size is not the target's. Its token ids are verified as the target's, so the "
        "releases that check refuse to start, and the others draft tokens that mean something "
        "else. One tokenizer in both, padded to two sizes (Qwen2.5's 151936 and 152064), is the "
        "same vocabulary where the release checks nothing.",
        "vLLM: 0.9.2 vllm/spec_decode/spec_decode_worker.py:1260 (V0's assert), 0.15.0 "
        "vllm/config/speculative.py:679-697 (V1's ValueError; `use_heterogeneous_vocab` allows "
        "two vocabularies from 0.25.0); SGLang: 0.5.15 "
        "srt/speculative/standalone_worker_v2.py:215-245, no check before.",
        "Use a draft of the target's family, trained on its tokenizer (vLLM 0.25.0 and later: "
        "or set `use_heterogeneous_vocab`).",
        "draft vocab 128256, target vocab 151936 (a Llama-3.2-1B draft for Qwen3-8B).",
    ),
    FindingEntry(
        "tokenizer-mismatch", ("error", "warning"), SPEC,
        "The draft ships a tokenizer whose token -> id map differs from the target's (error), "
        "or other special tokens (warning). Engines tokenize with the target's tokenizer only.",
        "Both engines build the tokenizer from the target model.",
        "Train the draft on the target's tokenizer.",
        "a draft trained with Llama 3.1's tokenizer served behind Llama 3.3 with added tokens.",
    ),
    FindingEntry(
        "chat-template-drift", ("warning",), SPEC,
        "The chat template the draft ships (its record of how training data was formatted) "
        "differs from the target's, which formats every chat request.",
        "Chat requests are formatted with the target's template.",
        "Retrain on data formatted with the served template, or serve with `--chat-template` "
        "of the training data if the target allows.",
        "a draft trained on ChatML text behind a Llama 3 template.",
    ),
    FindingEntry(
        "context-exceeds-draft", ("error", "warning"), SPEC,
        "The served context passes the draft's trained positions. An error only where the "
        "engine refuses to start (SGLang 0.5.x without SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
        "=1); elsewhere a warning: prompts past the draft's limit draft positions it never saw.",
        "SGLang's model_config context check and rope-factor rule; vLLM's max_model_len and "
        "rotary cache sizing for the draft.",
        "Serve a context within the draft's `max_position_embeddings`, or train the draft on "
        "the served context.",
        "--context-length 131072 with a draft of max_position_embeddings 2048.",
    ),
    FindingEntry(
        "rope-mismatch", ("warning",), SPEC,
        "The draft's `rope_theta`/`rope_scaling` differ from the target's, or launch overrides "
        "reach one and not the other.",
        "SGLang applies --json-model-override-args to the draft too; vLLM keeps --hf-overrides "
        "for the target.",
        "Give the draft the RoPE settings it was trained with, matching the target's.",
        "target rope_theta 500000, draft 10000.",
    ),
    FindingEntry(
        "quantization-mismatch", ("error", "warning"), SPEC,
        "Scale tensors in a draft whose config declares no quantization (refused at start on "
        "some releases: error), or in an EAGLE head a release builds without its quantization "
        "(vLLM through 0.11.0: error); a bf16 draft quantized online with the target's "
        "--quantization, or a quantized target feeding its hidden states to an unquantized "
        "draft (warnings).",
        "The releases' quantization handling of the draft (SGLang's "
        "--speculative-draft-model-quantization from 0.5.14; vLLM's quant config).",
        "Declare the draft's quantization in its config, or export it unquantized; on SGLang "
        "0.5.14+ `--speculative-draft-model-quantization unquant` keeps a bf16 draft as is.",
        "fc.weight_scale present, no quantization_config.",
    ),
    FindingEntry(
        "draft-settings", ("error", "warning", "info"), SPEC,
        "Draft decode settings the engine refuses or overrides: an attention backend without "
        "an EAGLE variant, topk/draft tokens without steps (error); topk 1 with draft tokens "
        "other than steps + 1 (warning); none given (info: the values the release picks). "
        "vLLM's suffix decoding: a release without the method, a launch given with no "
        "arctic-inference beside the install, a suffix setting out of range (error). vLLM: "
        "a speculative `max_model_len` past the draft's or the target's (error).",
        "SGLang's server_args speculative defaults and draft_utils/eagle_worker backend lists; "
        "vLLM's num_speculative_tokens requirement (suffix defaults it to its tree depth), "
        "SpeculativeConfig's suffix checks (ImportError without arctic_inference, ValueError "
        "for a setting out of range) and its _maybe_override_draft_max_model_len (ValueError "
        "'cannot be larger than').",
        "Give --speculative-num-steps, --speculative-eagle-topk and "
        "--speculative-num-draft-tokens together, or num_speculative_tokens on vLLM; for "
        "suffix, pip install arctic-inference into the engine's environment.",
        "--speculative-eagle-topk 4 without --speculative-num-steps.",
    ),
    FindingEntry(
        "draft-head-tied", ("error",), SPEC,
        "SGLang honours a draft's `tie_word_embeddings`: its head becomes the target's "
        "embedding (cut to draft_vocab_size rows from 0.5.6): wrong drafts.",
        "SGLang's llama_eagle3.py head construction; vLLM ignores the flag.",
        "Set `tie_word_embeddings: false` in the draft config.",
        "tie_word_embeddings: true in an EAGLE-3 draft served by SGLang.",
    ),
    FindingEntry(
        "token-map-ignored", ("warning",), SPEC,
        "`--speculative-token-map` given with EAGLE3: the EAGLE-3 path uses the checkpoint's "
        "d2t and ignores it.",
        "SGLang's EAGLE-3 worker reads hot_token_id from the draft model.",
        "Drop the flag; the map travels in the checkpoint.",
        "--speculative-algorithm EAGLE3 --speculative-token-map hot.pt",
    ),
    FindingEntry(
        "accept-length-low", ("error", "warning"), "playbook spec-audit (log), " + LIVE,
        "The observed accept length is under 40% of its ceiling (num_steps + 1, capped by the "
        "draft tokens): speculation costs more than it saves. The symptom, not a cause. A "
        "warning for a method that drafts without a model (n-gram, suffix): it gains only on "
        "text that repeats itself, and nothing is broken.",
        "The engine's own acceptance figures: SGLang's decode log `accept len`, vLLM's "
        "spec-decode metrics.",
        "Look at the ranked causes `diagnose` lists before it.",
        "accept length 1.9 of a possible 8.",
    ),
    FindingEntry(
        "accept-position0-collapse", ("error", "warning"), LIVE,
        "The first draft token is almost never accepted: the head proposes nothing the target "
        "wants (wrong map, wrong hidden states, wrong head).",
        "The engine's per-position acceptance counters.",
        "Run `playbook vocab-audit` and `spec-audit`: a map or capture defect is the usual "
        "cause.",
        "position 0 accepted in 0.4% of verify steps.",
    ),
    FindingEntry(
        "accept-domain-gap", ("warning",), LIVE,
        "One kind of prompt (code, chat, math...) accepts far less than the best kind: the "
        "draft's training data or vocabulary do not cover that traffic.",
        "probe's prompt kinds measured against the same server.",
        "Retrain or extend the draft vocabulary with such data.",
        "code prompts accept 1.2 per step against 3.4 on chat.",
    ),
    FindingEntry(
        "accept-long-context-drop", ("warning",), LIVE,
        "Past the draft's trained positions the accept length falls: the draft was not trained "
        "on such contexts (see context-exceeds-draft).",
        "probe --compare long: the same text within and past the draft's limit.",
        "Train the draft with the served context.",
        "3.1 within 2048 positions, 1.3 past them.",
    ),
    FindingEntry(
        "no-draft-model", ("info",), VOCAB,
        "The server's speculative method drafts without a trained model (vLLM's `ngram`, "
        "`ngram_gpu`, `suffix`; SGLang's `NGRAM`): there is no draft checkpoint, so no head, "
        "vocabulary map or draft config to check, and no checkpoint is searched for (one found "
        "on the box would be somebody else's).",
        "vLLM config/speculative.py (SpeculativeMethod: the methods that load no draft model), "
        "SGLang speculative/spec_info.py (SpeculativeAlgorithm.NGRAM); the rule is "
        "`drafts_without_a_model` in remotedbg/engines/knowledge.py.",
        "Nothing to fix: measure what the method gains with `remotedbg probe`.",
        "pid 4242 drafts with method ngram, without a draft model: no draft checkpoint to audit",
    ),
    FindingEntry(
        "spec-config-cleared", ("info",), "playbook spec-audit",
        "Every spec-audit check ran and found nothing.",
        "The checks above.",
        "Nothing to fix in the configuration: measure with `remotedbg probe`.",
        "a correct EAGLE-3 deployment.",
    ),
)

CATALOG: dict[str, FindingEntry] = {entry.id: entry for entry in _ENTRIES}


def entry_for(finding_id: str) -> FindingEntry | None:
    return CATALOG.get(finding_id)


def close_ids(finding_id: str) -> list[str]:
    return difflib.get_close_matches(finding_id, list(CATALOG), n=3, cutoff=0.5)


def fix_for(finding_id: str) -> str | None:
    entry = CATALOG.get(finding_id)
    return entry.fix if entry else None


def as_markdown(entry: FindingEntry) -> str:
    return "\n".join(
        [
            f"## `{entry.id}`",
            "",
            f"Severity: {' / '.join(entry.severities)}. Reported by: {entry.reported_by}.",
            "",
            entry.meaning,
            "",
            f"**Rests on:** {entry.rests_on}",
            "",
            f"**Fix:** {entry.fix}",
            "",
            f"**Example:** {entry.example}",
            "",
        ]
    )


def catalog_markdown() -> str:
    """docs/findings.md, whole."""
    head = [
        "# Finding ids",
        "",
        "Generated from `remotedbg/engines/finding_catalog.py` (`remotedbg explain ID` prints "
        "the same entry); do not edit by hand.",
        "",
    ]
    return "\n".join(head + [as_markdown(entry) for entry in _ENTRIES])
