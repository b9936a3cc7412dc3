"""A character-level tokenizer for the arithmetic task, built with ``tokenizers`` and wrapped in
``PreTrainedTokenizerFast`` so it saves, loads and applies its chat template like any Hugging Face one.

Vocabulary (22 entries): 5 special tokens, the digits, ``+ - * = ;``, ``}`` and ``\\boxed{`` as one token.
Any other character maps to ``<unk>``.

Chat template: a user message renders as ``<|user|>`` plus its content *up to the first newline*, an
assistant message as ``<|assistant|>`` + content + ``<|end|>``, and the generation prompt is
``<|assistant|>``. System messages are not rendered. So ``ddrl.prompts.format_prompt`` gives the same
short prompt ``<|user|>47+38*2-9<|assistant|>`` for every cue placement: the system cue is dropped and
a suffix cue (appended after a newline) is cut off. The tiny model cannot read English; the cue
placements exist for real models.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, UNK, END, USER, ASSISTANT = "<|pad|>", "<unk>", "<|end|>", "<|user|>", "<|assistant|>"
SPECIAL_TOKENS = [PAD, UNK, END, USER, ASSISTANT]
BOXED = "\\boxed{"
CHARACTERS = list("0123456789+-*=;}")
VOCAB = SPECIAL_TOKENS + CHARACTERS + [BOXED]

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}"
    "<|user|>{{ message['content'].split('\\n')[0] }}"
    "{%- elif message['role'] == 'assistant' -%}"
    "<|assistant|>{{ message['content'] }}<|end|>"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"
)


def build_tokenizer(model_max_length: int = 256) -> PreTrainedTokenizerFast:
    """The testbed tokenizer (deterministic: the vocabulary is fixed, nothing is learned)."""
    vocab = {tok: i for i, tok in enumerate(VOCAB)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # "\boxed{" is one piece, every other character its own piece.
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"\\boxed\{|."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        unk_token=UNK,
        eos_token=END,
        additional_special_tokens=[USER, ASSISTANT],
        model_max_length=model_max_length,
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
    )
    return tok
