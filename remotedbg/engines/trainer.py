"""What an EAGLE-3 draft was trained on: the trainer's capture convention (knowledge, data only).

SpecForge (the trainer SGLang's and vLLM's EAGLE-3 drafts come from) feeds the draft the target's
Hugging Face `hidden_states` at the configured layer ids: each entry is a decoder layer's output
in the residual stream (the layer's hidden states plus its residual), one per layer id, and
never the embedding output (HF's entry 0). The engines' released capture code feeds the same
(SGLang `hidden_states + residual` at the input of layer id + 1; vLLM likewise), which is why a
served capture that differs from its release is judged against this.
"""

from __future__ import annotations

CAPTURE = {
    "point": "the residual stream (hidden_states + residual, a decoder layer's output)",
    "count": "one per layer id in eagle_aux_hidden_state_layer_ids",
    "embedding": False,
    # SpecForge 0.2.0: default ids [1, n//2 - 1, n - 4] or eagle_config's
    # (algorithms/model_providers.py:188-211), exactly 3 (application/planning.py:96-111), aux
    # width 3 * hidden (inference/capture.py:68), captured through SGLang's
    # set_eagle3_layers_to_capture (offline_capture/sglang_backend/capture.py:86-87); 0.1.0 read
    # HF hidden_states[id + 1], entry 0 being the embedding output (core/eagle3.py:89-114)
    "cite": "SpecForge 0.2.0 algorithms/model_providers.py:188-211, offline_capture/"
            "sglang_backend/capture.py:86-87; 0.1.0 core/eagle3.py:89-114",
}
