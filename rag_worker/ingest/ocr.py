"""Optical character recognition for scanned PDF pages and image uploads, fully offline.

The engine is rapidocr's PP-OCR detection, orientation and recognition models, which ship
inside its wheel and run on onnxruntime.  The model files are passed by path, so rapidocr
never takes its "model missing → download it" branch: a missing file fails here, loudly,
not as a network call at run time.  The engine is loaded once per extractor process, the
first time a page needs it (parsing a text PDF never pays for it).

`LIGHTRAG_MCP_OCR` (`auto` | `off`) and `LIGHTRAG_MCP_OCR_MAX_PAGES` say whether OCR runs
and how many pages of one document it may read; the extractor also stops OCR when a
document's time budget is spent, so a long scan is cut with a warning, never by the
extraction timeout.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from config.settings import setting

from .failures import Failure, refuse
from .ocr_layout import lines_in_reading_order

if TYPE_CHECKING:
    from PIL.Image import Image

logger = logging.getLogger(__name__)

OCR_ENV = "LIGHTRAG_MCP_OCR"
OCR_MAX_PAGES_ENV = "LIGHTRAG_MCP_OCR_MAX_PAGES"
#: The bundled models, by rapidocr config section (PP-OCRv6 small det/rec, PP-OCR mobile orientation).
MODEL_FILES = {
    "Det": "PP-OCRv6_det_small.onnx",
    "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
    "Rec": "PP-OCRv6_rec_small.onnx",
}
#: Largest image OCR accepts, in pixels: an A3 page at 600 dpi is ~70 M.  Bigger is a
#: decompression bomb (a few KB of PNG can declare 100 000 × 100 000 pixels).
MAX_IMAGE_PIXELS = 80_000_000
#: Images are cropped to their ink and scaled so their longer side is at most this before
#: OCR (rapidocr's own bound, set here so our copy, not a larger one, is what it holds).
#: Measured on generated 300-dpi pages (scripts/bench_ocr.py): larger sides were slower and
#: no more accurate.
OCR_MAX_SIDE = 2000
#: rapidocr's settings, chosen by measurement: the text detector sees the page scaled to a
#: longest side of 736 px (its "min" default missed a lone line on an A4 page), and the
#: 0°/180° orientation classifier is off: on clean upright scans it flipped whole lines into
#: garbage (word accuracy 60-90 % with it, 99-100 % without).
ENGINE_PARAMS: dict[str, Any] = {
    "Global.log_level": "error",
    "Global.use_cls": False,
    "Global.max_side_len": OCR_MAX_SIDE,
    "Det.limit_type": "max",
    "Det.limit_side_len": 736,
}
# A pixel darker than this is ink, when cropping a page to its content.
_INK_LEVEL = 128
_CROP_MARGIN = 40
#: Recognised lines below this confidence are noise (speckles, stamps), not text.
MIN_LINE_SCORE = 0.5
# Fewer characters than this on a page that draws an image: the text layer is a page number
# or a scanner's stamp, and the page is read by OCR.
MIN_TEXT_CHARS = 20

OCR_OFF_ADVICE = f"OCR is off on this server ({OCR_ENV}=off); set {OCR_ENV}=auto to read scanned pages and images."


@dataclass(frozen=True)
class OcrOptions:
    """Whether OCR runs, and its bounds for one document."""

    mode: str = "auto"
    max_pages: int = 50
    #: Seconds OCR may spend on one document (None: no bound); set below the extraction timeout.
    budget_s: float | None = None

    @property
    def enabled(self) -> bool:
        return self.mode != "off"


def ocr_options_from_env(environ: Mapping[str, str] | None = None, *, budget_s: float | None = None) -> OcrOptions:
    """The OCR settings of this process's environment (validated at the front's start-up)."""
    env = os.environ if environ is None else environ
    values = {}
    for name in (OCR_ENV, OCR_MAX_PAGES_ENV):
        spec = setting(name)
        values[name] = spec.parse(name, env.get(name, spec.default))
    return OcrOptions(mode=values[OCR_ENV], max_pages=values[OCR_MAX_PAGES_ENV], budget_s=budget_s)


@dataclass
class OcrBudget:
    """Pages and seconds left for OCR in one document; records the pages it had to skip."""

    options: OcrOptions
    started: float = field(default_factory=time.monotonic)
    used_pages: int = 0
    skipped: list[int] = field(default_factory=list)

    def allows(self, page: int) -> bool:
        """True if `page` may be read by OCR; otherwise the page is recorded as skipped."""
        over_time = self.options.budget_s is not None and time.monotonic() - self.started > self.options.budget_s
        if self.used_pages >= self.options.max_pages or over_time:
            self.skipped.append(page)
            return False
        self.used_pages += 1
        return True

    def warning(self) -> str | None:
        """Why pages were not read, or None when none was skipped."""
        if not self.skipped:
            return None
        pages = page_ranges(self.skipped)
        if self.used_pages >= self.options.max_pages:
            reason = f"OCR reads at most {self.options.max_pages} pages of one document ({OCR_MAX_PAGES_ENV})"
        else:
            reason = f"OCR ran out of its {self.options.budget_s:g} s time budget for this document"
        return f"{pages} were not read: {reason}; split the document to index the rest."


class ModelMissing(Exception):
    """A bundled OCR model file is not where rapidocr's wheel puts it."""


def bundled_model_paths() -> dict[str, Path]:
    """The model files shipped in rapidocr's wheel; raises `ModelMissing` naming the first absent one."""
    try:
        import rapidocr
    except ImportError as exc:
        raise ModelMissing("the rapidocr package is not installed") from exc
    models = Path(rapidocr.__file__).parent / "models"
    paths = {section: models / name for section, name in MODEL_FILES.items()}
    for path in paths.values():
        if not path.is_file() or path.stat().st_size == 0:
            raise ModelMissing(f"{path} is missing (reinstall rapidocr)")
    return paths


def _limit_native_memory() -> None:
    """Keep OCR's address space small: the extractor's cap (RLIMIT_AS) counts reservations.

    glibc gives each new thread a 64 MB malloc arena and onnxruntime starts one thread per
    core; OpenCV adds a pool of its own.  Measured on one page: peak virtual size 1.76 GB
    with the defaults, 1.25 GB with two arenas and one OpenCV thread (RSS ~0.4 GB either way).
    """
    import ctypes
    import ctypes.util

    import cv2

    cv2.setNumThreads(1)
    libc_name = ctypes.util.find_library("c")
    if libc_name and "libc" in libc_name:
        try:
            ctypes.CDLL(libc_name).mallopt(_M_ARENA_MAX, 2)
        except (OSError, AttributeError):  # not glibc: nothing to tune
            pass


_M_ARENA_MAX = -8  # glibc's mallopt parameter number


def create_engine() -> Any:
    """A new rapidocr engine on the bundled models (no download path), all three models loaded."""
    _limit_native_memory()
    from rapidocr import RapidOCR

    params: dict[str, Any] = {f"{section}.model_path": str(path) for section, path in bundled_model_paths().items()}
    engine = RapidOCR(params=params | ENGINE_PARAMS)
    # rapidocr loads each model on first use; one call on a tiny blank image loads them now,
    # so a broken model fails at load time, not half-way through a document.
    from PIL import Image as PilImage

    engine(PilImage.new("RGB", (64, 64), "white"))
    return engine


_engine: Any = None
_engine_lock = threading.Lock()


def get_engine() -> Any:
    """This process's engine, created on first use; raises `EXTRACTION_FAILED` when OCR cannot load."""
    global _engine
    with _engine_lock:
        if _engine is None:
            started = time.perf_counter()
            try:
                _engine = create_engine()
            except ModelMissing as exc:
                logger.error("ocr: cannot load the OCR model: %s", exc)
                raise refuse(Failure.OCR_MODEL_MISSING) from None
            logger.info("ocr: engine loaded in %.2f s", time.perf_counter() - started)
        return _engine


def check_pixels(width: int, height: int, what: str) -> None:
    """Refuse an image larger than `MAX_IMAGE_PIXELS` (`RESOURCE_LIMIT_EXCEEDED`) before it is decoded."""
    if width * height > MAX_IMAGE_PIXELS:
        raise refuse(
            Failure.TOO_MANY_PIXELS,
            f"{what} is {width:,} × {height:,} pixels; OCR reads images of at most "
            f"{MAX_IMAGE_PIXELS // 1_000_000} million pixels.",
            details={"width": width, "height": height, "max_pixels": MAX_IMAGE_PIXELS},
        )


def _prepared(image: Image) -> Image | None:
    """`image` as RGB (or grey), cropped to its ink and scaled so its longer side is at most
    `OCR_MAX_SIDE`; None for a page without ink."""
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    ink = image.convert("L").point(lambda level: 255 if level < _INK_LEVEL else 0).getbbox()
    if ink is None:
        return None
    left, top, right, bottom = ink
    image = image.crop(
        (
            max(0, left - _CROP_MARGIN),
            max(0, top - _CROP_MARGIN),
            min(image.width, right + _CROP_MARGIN),
            min(image.height, bottom + _CROP_MARGIN),
        )
    )
    longest = max(image.size)
    if longest > OCR_MAX_SIDE:
        scale = OCR_MAX_SIDE / longest
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    return image


@dataclass(frozen=True)
class OcrReading:
    """What OCR read on one image: its lines in reading order, how sure it was, and how the image was turned."""

    lines: list[str]
    #: Mean recognition score of the kept lines, weighted by their length (0 when nothing was read).
    confidence: float = 0.0
    #: Degrees (counter-clockwise) the image was turned to read it: a page scanned sideways or upside down.
    turned: int = 0
    weight: float = 0.0  # score × characters, summed: how much was read, and how surely
    #: Most text ran in tall boxes: the page lies sideways (the recogniser reads each line turned,
    #: but the lines come out in the wrong order, run together).
    sideways: bool = False

    @property
    def doubtful(self) -> bool:
        """True when the text is likely wrong: low confidence (a poor scan, or a script the models do not read)."""
        return bool(self.lines) and self.confidence < LOW_CONFIDENCE


#: Below this confidence the page is also read turned by 180°, 90° and 270°, and the surest reading kept.
TRY_TURNS_BELOW = 0.85
#: Below this confidence the result warns that the page's text may be wrong.
LOW_CONFIDENCE = 0.75


def _recognise(image: Image, turned: int) -> OcrReading:
    result = get_engine()(image)
    boxes = getattr(result, "boxes", None)
    texts = getattr(result, "txts", None)
    scores = getattr(result, "scores", None)
    if boxes is None or not texts:
        return OcrReading([], turned=turned)
    kept = [
        (box, text, float(score))
        for box, text, score in zip(boxes, texts, scores or [1.0] * len(texts), strict=False)
        if text.strip() and score >= MIN_LINE_SCORE
    ]
    chars = sum(len(text) for _, text, _ in kept)
    weight = sum(score * len(text) for _, text, score in kept)
    tall = sum(len(text) for box, text, _ in kept if _is_tall(box))
    lines = lines_in_reading_order([box for box, _, _ in kept], [text for _, text, _ in kept])
    return OcrReading(lines, weight / chars if chars else 0.0, turned, weight, sideways=tall > chars / 2)


def _is_tall(corners: Any) -> bool:
    xs = [float(point[0]) for point in corners]
    ys = [float(point[1]) for point in corners]
    return max(ys) - min(ys) > 1.5 * (max(xs) - min(xs))


def read_image(image: Image) -> OcrReading:
    """OCR `image`: its text lines in reading order (columns one after the other).  When OCR is
    unsure of the upright image, the image is also read turned 180°, 90° and 270°, and the
    reading with the most text read surely is kept (a page scanned sideways or upside down)."""
    check_pixels(image.width, image.height, "The image")
    prepared = _prepared(image)
    if prepared is None:
        return OcrReading([])
    best = _recognise(prepared, 0)
    # Turning is tried where there is text to read: a drawing with a label or two is not worth three more runs.
    worth_turning = sum(map(len, best.lines)) >= MIN_TEXT_CHARS
    if worth_turning and (best.confidence < TRY_TURNS_BELOW or best.sideways):
        upright = best
        for turn in (90, 270, 180) if best.sideways else (180, 90, 270):
            candidate = _recognise(prepared.rotate(turn, expand=True, fillcolor="white"), turn)
            # A turned reading must be sure of itself: on a script the models do not read, every
            # turn is junk, and the upright junk is at least in the page's own orientation.  A
            # sideways page read upright may score as well as turned: nearly as well is enough.
            enough = 0.8 * upright.weight if upright.sideways else best.weight
            if candidate.confidence >= TRY_TURNS_BELOW and not candidate.sideways and candidate.weight > enough:
                best = candidate
                if upright.sideways:
                    break
    if best.turned:
        logger.info("ocr: the image was read turned by %d degrees", best.turned)
    return best


@dataclass
class OcrNotes:
    """Pages of one document that OCR read unsurely or turned, for the result's warnings."""

    doubtful: dict[int, float] = field(default_factory=dict)
    turned: dict[int, int] = field(default_factory=dict)

    def record(self, page: int, reading: OcrReading) -> list[str]:
        """Note what is worth saying about page `page`'s reading; returns its lines."""
        if reading.doubtful:
            self.doubtful[page] = reading.confidence
        if reading.turned:
            self.turned[page] = reading.turned
        return reading.lines

    def warnings(self) -> list[str]:
        notes = []
        if self.turned:
            pages = page_ranges(sorted(self.turned))
            notes.append(f"{pages} {'was' if len(self.turned) == 1 else 'were'} scanned turned sideways or upside "
                         "down and read turned upright.")
        if self.doubtful:
            pages = page_ranges(sorted(self.doubtful))
            lowest = min(self.doubtful.values())
            notes.append(
                f"OCR read {pages} with low confidence (as low as {lowest:.0%}): the text may be wrong. The scan may be "
                f"poor, or the script one the OCR models do not read ({OCR_SCRIPTS}); upload a sharper scan or a "
                "text-based copy."
            )
        return notes


#: The scripts the packaged models read, for the low-confidence warning.
OCR_SCRIPTS = "they are made for Latin-script languages, Chinese and Japanese; Hebrew, Cyrillic or Korean text comes out as junk"


def ocr_image(image: Image) -> list[str]:
    """The text lines of `image` in reading order (see `read_image`)."""
    return read_image(image).lines


def page_ranges(numbers: Sequence[int]) -> str:
    """`page 3`, `pages 2-4`, `pages 1, 3-5 and 9` (at most 10 ranges shown)."""
    ranges: list[tuple[int, int]] = []
    for number in sorted(numbers):
        if ranges and number == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], number)
        else:
            ranges.append((number, number))
    parts = [f"{low}" if low == high else f"{low}-{high}" for low, high in ranges[:10]]
    if len(ranges) > 10:
        parts.append(f"{len(ranges) - 10} more")
    shown = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    plural = len(numbers) > 1
    return f"page{'s' if plural else ''} {shown}"


def page_warnings(ocr_pages: Sequence[int], empty_pages: Sequence[int]) -> list[str]:
    """The words for a result: which pages were read by OCR and which gave no text."""
    warnings = []
    if ocr_pages:
        verb = "were" if len(ocr_pages) > 1 else "was"
        warnings.append(f"{page_ranges(ocr_pages)} {verb} read by OCR (scanned); check names and numbers.")
    if empty_pages:
        warnings.append(f"{page_ranges(empty_pages)} gave no text.")
    return warnings
