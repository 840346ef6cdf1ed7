"""Real training steps and generation on one GPU, for the cases public tables lack.

Runs on a machine with a CUDA GPU, PyTorch, transformers and PEFT (nothing of gpufit is
imported: the device machine has none of its dependencies). Each model is built from its
public ``config.json`` figures with random weights, so nothing is downloaded. Per case it
records the peak memory PyTorch allocated and reserved over model build and steps, the
median step time and tokens per second (training), or decode seconds and tokens per second
(``generate``). Results go to ``--out`` as JSON lines, one per case, as soon as each case
ends, so a run cut short keeps what it measured; a case that runs out of memory is recorded
as ``"oom"`` (a fit/OOM verdict is data too). ``bench/device_compare.py`` puts gpufit's
estimates beside the figures; ``docs/estimator.md`` has both.

    python3 bench/device_steps.py --out results.jsonl [--budget-s 330] [--tiny]

``--tiny`` shrinks every model to two narrow layers and runs on the CPU when no GPU is
there: it checks the script, not the hardware.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

try:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
except ImportError:  # the cases and configs are read without them (bench/device_compare.py)
    torch = None

# Architecture figures from each model's public config.json on the Hugging Face Hub.
CONFIGS: dict[str, dict[str, Any]] = {
    # meta-llama/Llama-3.2-1B config.json
    "llama-3.2-1b": {
        "model_type": "llama",
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": True,
    },
    # meta-llama/Llama-3.2-3B config.json
    "llama-3.2-3b": {
        "model_type": "llama",
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "num_hidden_layers": 28,
        "num_attention_heads": 24,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": True,
    },
    # meta-llama/Llama-3.1-8B config.json
    "llama-3.1-8b": {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    },
    # Qwen/Qwen2.5-0.5B config.json
    "qwen2.5-0.5b": {
        "model_type": "qwen2",
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    },
    # Qwen/Qwen2.5-1.5B config.json
    "qwen2.5-1.5b": {
        "model_type": "qwen2",
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_hidden_layers": 28,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    },
    # Qwen/Qwen2.5-7B config.json
    "qwen2.5-7b": {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "tie_word_embeddings": False,
    },
    # openai-community/gpt2-medium config.json
    "gpt2-medium": {
        "model_type": "gpt2",
        "n_embd": 1024,
        "n_layer": 24,
        "n_head": 16,
        "vocab_size": 50257,
        "n_positions": 1024,
    },
    # mistralai/Mixtral-8x7B-v0.1 config.json
    "mixtral-8x7b": {
        "model_type": "mixtral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "tie_word_embeddings": False,
    },
}

#: LoRA on every linear layer of a block (PEFT's "all-linear" for these models), rank 16,
#: alpha 32: torchtune's and PEFT's common recipe settings.
LORA_ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LORA_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class Train:
    """One training step setting. ``precision``: "mixed" keeps fp32 weights and runs the
    matmuls in bf16 under autocast (HF Trainer's ``bf16=True``); "bf16" holds weights,
    gradients and AdamW states in bf16 (torchtune's default)."""

    name: str
    model: str
    method: str  # full | lora
    precision: str  # mixed | bf16
    seq: int
    micro_batch: int
    checkpointing: bool
    lora_targets: tuple[str, ...] = LORA_ALL
    #: bf16 autocast around the step; None: on for "mixed" only. HF Trainer's bf16=True
    #: turns it on whatever the weights' dtype (accelerate's mixed_precision="bf16").
    autocast: bool | None = None
    #: PEFT keeps adapters in fp32 over a bf16 base (LoraConfig/get_peft_model
    #: autocast_adapter_dtype=True, its default); False keeps them in the base's dtype
    fp32_adapters: bool = True
    #: config.json fields changed from the model's own (to isolate one mechanism)
    overrides: tuple[tuple[str, Any], ...] = ()
    kind: str = "train"


@dataclass(frozen=True)
class Generate:
    """HF ``generate`` with a KV cache, greedy, every sequence forced to ``new`` tokens."""

    name: str
    model: str
    batch: int
    prompt: int
    new: int
    #: "generate": model.generate; "forward": the model called once per token with a
    #: DynamicCache, no sampling or stopping logic (what is left is the model's own cost)
    engine: str = "generate"
    kind: str = "generate"


CASES: tuple[Train | Generate, ...] = (
    Train("lora-8b-s2048-b4-ckpt", "llama-3.1-8b", "lora", "bf16", 2048, 4, True),
    Train("lora-8b-s4096-b2", "llama-3.1-8b", "lora", "bf16", 4096, 2, False),
    Train("full-8b-bf16-s2048-b2-ckpt", "llama-3.1-8b", "full", "bf16", 2048, 2, True),
    Train("full-3b-mixed-s2048-b4-ckpt", "llama-3.2-3b", "full", "mixed", 2048, 4, True),
    Train("full-1b-mixed-s2048-b8", "llama-3.2-1b", "full", "mixed", 2048, 8, False),
    Train("full-qwen1.5b-mixed-s4096-b4-ckpt", "qwen2.5-1.5b", "full", "mixed", 4096, 4, True),
    Train("full-qwen0.5b-mixed-s2048-b16", "qwen2.5-0.5b", "full", "mixed", 2048, 16, False),
    Train("lora-qwen7b-s2048-b8-ckpt", "qwen2.5-7b", "lora", "bf16", 2048, 8, True),
    Train("pretrain-gpt2m-mixed-s1024-b32", "gpt2-medium", "full", "mixed", 1024, 32, False),
    Generate("gen-qwen0.5b-b64-p256-n256", "qwen2.5-0.5b", 64, 256, 256),
    Generate("gen-qwen1.5b-b64-p256-n256", "qwen2.5-1.5b", 64, 256, 256),
    Generate("gen-8b-b64-p256-n256", "llama-3.1-8b", 64, 256, 256),
    Generate("gen-8b-b256-p256-n128", "llama-3.1-8b", 256, 256, 128),
    # at the edge of 141 GB: 16 bytes a parameter for 8B is 128 GB before activations
    Train("full-8b-mixed-s2048-b1-ckpt", "llama-3.1-8b", "full", "mixed", 2048, 1, True),
    Train(
        "lora-mixtral-attn-s2048-b1-ckpt",
        "mixtral-8x7b",
        "lora",
        "bf16",
        2048,
        1,
        True,
        lora_targets=LORA_ATTENTION,
    ),
    # What adds to LoRA's step: HF Trainer's autocast over the fp32 adapters, or bf16 adapters
    Train(
        "lora-8b-s4096-b2-autocast", "llama-3.1-8b", "lora", "bf16", 4096, 2, False, autocast=True
    ),
    Train(
        "lora-8b-s4096-b2-bf16ad",
        "llama-3.1-8b",
        "lora",
        "bf16",
        4096,
        2,
        False,
        fp32_adapters=False,
    ),
    Train(
        "lora-8b-s2048-b4-ckpt-autocast",
        "llama-3.1-8b",
        "lora",
        "bf16",
        2048,
        4,
        True,
        autocast=True,
    ),
    Train(
        "lora-8b-s2048-b4-ckpt-bf16ad",
        "llama-3.1-8b",
        "lora",
        "bf16",
        2048,
        4,
        True,
        fp32_adapters=False,
    ),
    # What slows GPT-2: its tanh GELU written out in eager ops, and dropout
    Train(
        "pretrain-gpt2m-fusedgelu-s1024-b32",
        "gpt2-medium",
        "full",
        "mixed",
        1024,
        32,
        False,
        overrides=(("activation_function", "gelu_pytorch_tanh"),),
    ),
    Train(
        "pretrain-gpt2m-nodrop-s1024-b32",
        "gpt2-medium",
        "full",
        "mixed",
        1024,
        32,
        False,
        overrides=(("resid_pdrop", 0.0), ("embd_pdrop", 0.0), ("attn_pdrop", 0.0)),
    ),
    Train("full-qwen0.5b-mixed-s2048-b4", "qwen2.5-0.5b", "full", "mixed", 2048, 4, False),
    # What a decode step of generate costs beyond the model's own forward
    Generate("fwd-qwen0.5b-b64-p256-n256", "qwen2.5-0.5b", 64, 256, 256, engine="forward"),
    Generate("fwd-8b-b64-p256-n256", "llama-3.1-8b", 64, 256, 256, engine="forward"),
    Generate("gen-qwen0.5b-b1-p256-n256", "qwen2.5-0.5b", 1, 256, 256),
)

WARMUP_STEPS = 2  # first steps allocate the optimizer states and tune kernels
TIMED_STEPS = 5


@dataclass
class Result:
    name: str
    kind: str
    setting: dict[str, Any]
    status: str = "ok"  # ok | oom | error | skipped
    detail: str = ""
    params: int = 0
    trainable: int = 0
    peak_allocated_gib: float = 0.0
    peak_reserved_gib: float = 0.0
    device_used_gib: float = 0.0  # the whole device after the steps, as nvidia-smi counts it
    dtype: str = ""
    step_s: list[float] = field(default_factory=list)
    median_step_s: float = 0.0
    tokens_per_s: float = 0.0
    seconds_total: float = 0.0


def _config(name: str, tiny: bool, overrides: tuple[tuple[str, Any], ...] = ()) -> Any:
    kwargs = {**CONFIGS[name], **dict(overrides)}
    model_type = kwargs.pop("model_type")
    if tiny:  # two narrow layers, same shape of model
        for key, small in (
            ("num_hidden_layers", 2),
            ("n_layer", 2),
            ("hidden_size", 128),
            ("n_embd", 128),
            ("intermediate_size", 256),
            ("vocab_size", 1024),
        ):
            if key in kwargs:
                kwargs[key] = small
        if "num_attention_heads" in kwargs:
            kwargs["num_attention_heads"], kwargs["num_key_value_heads"] = 4, 2
        if "n_head" in kwargs:
            kwargs["n_head"] = 4
    return AutoConfig.for_model(model_type, **kwargs)


def _build(
    name: str,
    dtype: torch.dtype,
    device: str,
    tiny: bool,
    overrides: tuple[tuple[str, Any], ...] = (),
) -> Any:
    config = _config(name, tiny, overrides)
    config.use_cache = False
    with torch.device(device):
        try:
            model = AutoModelForCausalLM.from_config(
                config, dtype=dtype, attn_implementation="sdpa"
            )
        except TypeError:  # transformers before 5 names it torch_dtype
            model = AutoModelForCausalLM.from_config(
                config, torch_dtype=dtype, attn_implementation="sdpa"
            )
    return model.to(device=device, dtype=dtype)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _peaks(result: Result, device: str) -> None:
    if device == "cuda":
        result.peak_allocated_gib = torch.cuda.max_memory_allocated() / 2**30
        result.peak_reserved_gib = torch.cuda.max_memory_reserved() / 2**30
        free, total = torch.cuda.mem_get_info()
        result.device_used_gib = (total - free) / 2**30


def run_train(case: Train, device: str, tiny: bool, result: Result) -> None:
    dtype = torch.float32 if case.precision == "mixed" else torch.bfloat16
    model = _build(case.model, dtype, device, tiny, case.overrides)
    if case.method == "lora":
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(
            r=16, lora_alpha=32, lora_dropout=0.0, target_modules=list(case.lora_targets)
        )
        model = get_peft_model(model, lora, autocast_adapter_dtype=case.fp32_adapters)
    if case.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    result.dtype = str(params[0].dtype)
    result.params = sum(p.numel() for p in model.parameters())
    result.trainable = sum(p.numel() for p in params)
    fused = device == "cuda"
    optimizer = torch.optim.AdamW(params, lr=1e-5, fused=fused)
    vocab = model.config.vocab_size
    seq = 64 if tiny else case.seq
    ids = torch.randint(0, vocab, (case.micro_batch, seq), device=device)
    autocast = case.precision == "mixed" if case.autocast is None else case.autocast
    for i in range(WARMUP_STEPS + TIMED_STEPS):
        _sync(device)
        start = time.perf_counter()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        _sync(device)
        if i >= WARMUP_STEPS:
            result.step_s.append(time.perf_counter() - start)
    result.median_step_s = statistics.median(result.step_s)
    result.tokens_per_s = case.micro_batch * seq / result.median_step_s
    _peaks(result, device)


def _decode_forward(model: Any, ids: torch.Tensor, new: int, device: str) -> tuple[float, float]:
    """(prefill seconds, seconds a decode step) calling the model itself once per token."""
    _sync(device)
    start = time.perf_counter()
    out = model(input_ids=ids, use_cache=True)
    token = out.logits[:, -1:].argmax(-1)
    _sync(device)
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(new - 1):
        out = model(input_ids=token, past_key_values=out.past_key_values, use_cache=True)
        token = out.logits[:, -1:].argmax(-1)
    _sync(device)
    return prefill, (time.perf_counter() - start) / (new - 1)


def run_generate(case: Generate, device: str, tiny: bool, result: Result) -> None:
    model = _build(case.model, torch.bfloat16, device, tiny).eval()
    model.config.use_cache = True
    result.dtype = str(next(model.parameters()).dtype)
    result.params = sum(p.numel() for p in model.parameters())
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (case.batch, case.prompt), device=device)
    new = 8 if tiny else case.new
    if case.engine == "forward":
        with torch.inference_mode():
            _decode_forward(model, ids, 4, device)  # warm-up
            runs = [_decode_forward(model, ids, new, device) for _ in range(2)]
        prefill = statistics.median(r[0] for r in runs)
        result.step_s = [r[1] for r in runs]
        result.median_step_s = statistics.median(result.step_s)
        result.tokens_per_s = case.batch / result.median_step_s
        result.detail = f"prefill {prefill * 1e3:.1f} ms"
        _peaks(result, device)
        return
    mask = torch.ones_like(ids)
    settings = {
        "attention_mask": mask,
        "do_sample": False,
        "max_new_tokens": new,
        "min_new_tokens": new,
        "pad_token_id": 0,
        "eos_token_id": None,
        "use_cache": True,
    }
    with torch.inference_mode():
        model.generate(ids, **{**settings, "max_new_tokens": 4, "min_new_tokens": 4})
        for _ in range(2):  # a prefill alone, then the whole call: decode is the difference
            _sync(device)
            start = time.perf_counter()
            out = model.generate(ids, **{**settings, "max_new_tokens": 1, "min_new_tokens": 1})
            _sync(device)
            prefill = time.perf_counter() - start
            start = time.perf_counter()
            out = model.generate(ids, **settings)
            _sync(device)
            result.step_s.append(time.perf_counter() - start)
    produced = out.shape[1] - case.prompt
    total = statistics.median(result.step_s)
    result.median_step_s = (total - prefill) / max(produced - 1, 1)  # one decode step
    result.tokens_per_s = case.batch * produced / total
    result.detail = f"prefill {prefill * 1e3:.1f} ms, {produced} tokens a sequence"
    _peaks(result, device)


def _free(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def environment(device: str) -> dict[str, Any]:
    import transformers

    env: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__}
    start = time.perf_counter()  # the host CPU's pace, for the eager stacks' Python costs
    sum(i * i for i in range(2_000_000))
    env["python_loop_s"] = round(time.perf_counter() - start, 4)
    try:
        import peft

        env["peft"] = peft.__version__
    except ImportError:
        env["peft"] = None
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, memory_gib=props.total_memory / 2**30, cuda=torch.version.cuda)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-s", type=float, default=330.0, help="start no case after this")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    if torch is None:
        raise SystemExit("needs PyTorch, transformers and PEFT (the GPU machine has them)")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.tiny:
        raise SystemExit("no GPU: run with --tiny to check the script")
    wanted = set(filter(None, args.only.split(",")))
    began = time.perf_counter()
    with Path(args.out).open("w", encoding="utf-8") as out:
        out.write(json.dumps({"environment": environment(device)}) + "\n")
        for case in CASES:
            if wanted and case.name not in wanted:
                continue
            setting = {k: v for k, v in asdict(case).items() if k not in ("name", "kind")}
            result = Result(case.name, case.kind, setting)
            if time.perf_counter() - began > args.budget_s:
                result = replace(result, status="skipped", detail="time budget spent")
            else:
                _free(device)
                start = time.perf_counter()
                try:
                    if isinstance(case, Train):
                        run_train(case, device, args.tiny, result)
                    else:
                        run_generate(case, device, args.tiny, result)
                except torch.cuda.OutOfMemoryError as exc:
                    _peaks(result, device)
                    result.status, result.detail = "oom", str(exc).splitlines()[0][:300]
                except Exception as exc:  # one case's failure must not end the run
                    result.status, result.detail = "error", f"{type(exc).__name__}: {exc}"[:500]
                result.seconds_total = time.perf_counter() - start
            line = json.dumps(asdict(result))
            out.write(line + "\n")
            out.flush()
            print(
                f"{case.name:36s} {result.status:7s} alloc {result.peak_allocated_gib:6.1f} GiB "
                f"reserved {result.peak_reserved_gib:6.1f} GiB step {result.median_step_s:7.4f} s "
                f"{result.tokens_per_s:9.0f} tok/s ({result.seconds_total:.0f} s) {result.detail}",
                flush=True,
            )
            _free(device)


if __name__ == "__main__":
    main()
