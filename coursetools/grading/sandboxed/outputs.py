"""A kernel's output messages as bounded, inert data for the feedback page.

One job: turn the IOPub messages of one cell (``stream``, ``display_data``, ``execute_result``,
``error``, ``clear_output``) into a short list of plain dicts the feedback page can show, whatever
a student's code printed or displayed:

* ``{"kind": "text", "text": str}`` for streams, plain-text results and tracebacks (ANSI colour
  codes removed), each cell's text capped at :attr:`OutputLimits.text_chars`;
* ``{"kind": "image", "mime": "image/png" | "image/jpeg", "data": base64}`` for a figure, kept only
  when the bytes decode and start with that format's signature, and are under
  :attr:`OutputLimits.image_bytes`. SVG, HTML, JavaScript, LaTeX and widget outputs are never
  kept (they can carry scripts or load remote content); their ``text/plain`` form is shown instead.

The whole notebook shares one budget (:attr:`OutputLimits.notebook_bytes`); past it, outputs are
dropped and a single note says so. Only outputs of the display run are collected (never those of
a graded run, where a hidden test's inputs could reach what a later cell prints: see
:func:`coursetools.grading.grade.display_run`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from coursetools.rendering import ANSI, SIGNATURES

__all__ = ["OutputLimits", "OutputCollector", "ANSI"]


@dataclass(frozen=True)
class OutputLimits:
    """How much of a display run's output is kept."""

    text_chars: int = 20_000  # characters of text per cell
    image_bytes: int = 1024**2  # one figure, decoded
    images_per_cell: int = 8
    notebook_bytes: int = 12 * 1024**2  # everything kept for one notebook
    message_bytes: int = 2 * 1024**2  # one IOPub message (ZeroMQ drops a bigger one); 64 queued


class OutputCollector:
    """Collects one notebook's outputs, cell by cell, within :class:`OutputLimits`."""

    def __init__(self, limits: OutputLimits | None = None) -> None:
        self.limits = limits or OutputLimits()
        self.used = 0
        self.exhausted = False
        self.outputs: list[dict] = []
        self._text_chars = 0
        self._images = 0

    def new_cell(self) -> None:
        """Start collecting the next cell's outputs (the notebook's budget carries over)."""
        self.outputs, self._text_chars, self._images = [], 0, 0

    # ---- budget

    def _take(self, size: int) -> bool:
        if self.used + size > self.limits.notebook_bytes:
            if not self.exhausted:
                self.exhausted = True
                self.outputs.append(
                    {"kind": "note", "text": "output limit of this notebook reached: later outputs not shown"}
                )
            return False
        self.used += size
        return True

    # ---- messages

    def add(self, msg_type: str, content: object) -> None:
        """One IOPub message of this cell; anything malformed is ignored."""
        if not isinstance(content, dict) or self.exhausted:
            return
        if msg_type == "stream":
            self._text(content.get("text"))
        elif msg_type in ("display_data", "execute_result"):
            self._rich(content.get("data"))
        elif msg_type == "error":
            traceback = content.get("traceback")
            if isinstance(traceback, list) and all(isinstance(x, str) for x in traceback):
                self._text("\n".join(traceback) + "\n")
            else:
                self._text(f"{content.get('ename', 'Error')}: {content.get('evalue', '')}\n")
        elif msg_type == "clear_output":
            self.used -= sum(_size(o) for o in self.outputs)
            self.outputs, self._text_chars, self._images = [], 0, 0

    def add_note(self, text: str) -> None:
        """A remark of the grader's about this cell's outputs (shown once)."""
        note = {"kind": "note", "text": text}
        if note not in self.outputs:
            self.outputs.append(note)

    def _text(self, text: object) -> None:
        if not isinstance(text, str) or not text:
            return
        room = self.limits.text_chars - self._text_chars
        if room <= 0:
            return
        text = ANSI.sub("", text)
        if len(text) > room:
            text = text[:room] + f"\n[... output cut at {self.limits.text_chars:,} characters]\n"
        if not self._take(len(text.encode("utf-8", "surrogatepass"))):
            return
        self._text_chars += len(text)
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last["kind"] == "text":
            last["text"] += text
        else:
            self.outputs.append({"kind": "text", "text": text})

    def _rich(self, data: object) -> None:
        if not isinstance(data, dict):
            return
        for mime in ("image/png", "image/jpeg"):
            if mime in data:
                image = canonical_image(data[mime], mime, self.limits.image_bytes)
                if image is not None and self._images < self.limits.images_per_cell:
                    if self._take(len(image)):
                        self._images += 1
                        self.outputs.append({"kind": "image", "mime": mime, "data": image})
                    return
        plain = data.get("text/plain")
        if isinstance(plain, list):  # nbformat allows a list of lines
            plain = "".join(x for x in plain if isinstance(x, str))
        if isinstance(plain, str):
            self._text(plain if plain.endswith("\n") else plain + "\n")


def canonical_image(value: object, mime: str, cap: int) -> str | None:
    """``value`` as canonical base64 if it decodes to at most ``cap`` bytes of ``mime``."""
    if isinstance(value, list):
        value = "".join(x for x in value if isinstance(x, str))
    if not isinstance(value, str) or len(value) > cap * 4 // 3 + 1024:
        return None
    try:
        raw = base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) > cap or not raw.startswith(SIGNATURES[mime]):
        return None
    return base64.b64encode(raw).decode("ascii")


def _size(output: dict) -> int:
    if output["kind"] == "image":
        return len(output["data"])
    return len(output["text"].encode("utf-8", "surrogatepass"))
