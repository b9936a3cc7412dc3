"""Turning a question into the text a model is sampled from.

The official TTRL/DDRL preprocessing makes each question one user message and applies the model's chat
template with ``add_generation_prompt=True``. The instruction cue goes either into the system message
(Qwen2.5-Math: its template inserts exactly this cue as the default system message) or is appended to the
question (Qwen2.5-3B, Llama-3.1-8B-Instruct: ``data.suffix_prompt`` in DDRL's launch scripts).
"""

from __future__ import annotations

from typing import Literal

CUE = "Please reason step by step, and put your final answer within \\boxed{}."

CuePlacement = Literal["system", "suffix", "none"]
CUE_PLACEMENTS = ("system", "suffix", "none")


def chat_messages(question: str, cue: CuePlacement = "system") -> list[dict[str, str]]:
    """The chat messages for one question, with the cue placed as ``cue`` says."""
    if cue == "system":
        return [{"role": "system", "content": CUE}, {"role": "user", "content": question}]
    if cue == "suffix":
        return [{"role": "user", "content": f"{question}\n{CUE}"}]
    if cue == "none":
        return [{"role": "user", "content": question}]
    raise ValueError(f"cue must be one of {CUE_PLACEMENTS}, got {cue!r}")


def format_prompt(tokenizer, question: str, cue: CuePlacement = "system") -> str:
    """Apply ``tokenizer``'s chat template to one question; the result is what the sampler continues.

    A tokenizer without a chat template is an error (a silent plain-text fallback would change what the
    model sees without anyone noticing).
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"tokenizer {getattr(tokenizer, 'name_or_path', type(tokenizer).__name__)!r} has no chat_template; "
            "set tokenizer.chat_template or use a chat/instruct tokenizer"
        )
    return tokenizer.apply_chat_template(
        chat_messages(question, cue), tokenize=False, add_generation_prompt=True
    )
