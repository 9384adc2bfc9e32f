"""Work bounds before the expensive step, and fair shares of the extractors (issue 24 item 5)."""

from __future__ import annotations

import io
import threading

import anyio
import pytest
from PIL import Image

from protocol.errors import ErrorCode, RagError
from rag_worker.ingest.detection import detect_format
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.formats import DocFormat
from rag_worker.ingest.isolation import extract_isolated
from rag_worker.ingest.page_counts import check_page_bound, pdf_declared_pages, png_frame_count, tiff_page_count
from rag_worker.ingest.scheduling import FairSlots
from tests.fixtures.documents import make_pdf
from tests.fixtures.hostile_files import make_page_flood_tiff
from tests.fixtures.scans import image_bytes, render_page

pytestmark = pytest.mark.anyio

FLOOD = make_page_flood_tiff(100_000)


def refusal(call) -> RagError:  # type: ignore[no-untyped-def]
    with pytest.raises(RagError) as caught:
        call()
    return caught.value


def test_a_tiffs_pages_are_counted_from_its_directory_chain_up_to_one_past_the_limit() -> None:
    assert tiff_page_count(make_page_flood_tiff(7), 100) == 7
    assert tiff_page_count(FLOOD, 2_000) == 2_001  # stops there: the other 98,000 pages are never visited
    assert tiff_page_count(FLOOD, 1_000_000) == 100_000
    real = image_bytes([render_page(["one"]), render_page(["two"])], "TIFF")
    assert tiff_page_count(real, 100) == 2


def test_a_tiff_chain_that_loops_or_points_outside_the_file_ends_the_count() -> None:
    looped = bytearray(make_page_flood_tiff(3))
    looped[-4:] = (10).to_bytes(4, "little")  # the last page points back at the first
    assert tiff_page_count(bytes(looped), 100) == 3
    truncated = make_page_flood_tiff(3)[:-30]
    assert tiff_page_count(truncated, 100) == 2
    assert tiff_page_count(b"II*\x00\xff\xff\xff\xff", 100) == 0
    assert tiff_page_count(b"not a tiff", 100) == 0


def test_a_page_flood_tiff_is_refused_before_it_takes_an_extractor() -> None:
    error = refusal(lambda: check_page_bound(FLOOD, DocFormat.TIFF, 2_000))
    assert error.code == ErrorCode.FILE_TOO_LARGE and "more than 2,000 pages" in error.message
    error = refusal(lambda: extract_isolated(FLOOD, DocFormat.TIFF, timeout=5))  # 5 s would not parse it
    assert error.code == ErrorCode.FILE_TOO_LARGE and error.details == {"pages": 2_001, "max_pages": 2_000}


def test_the_image_extractor_counts_pages_without_pillows_frame_walk() -> None:
    error = refusal(lambda: extract_document(FLOOD, DocFormat.TIFF))
    assert error.code == ErrorCode.FILE_TOO_LARGE and "more than 2,000 pages" in error.message


def test_a_pdf_declaring_too_many_pages_is_refused_by_its_page_tree_count() -> None:
    pdf = make_pdf(["First page.", "Second page."])
    assert pdf_declared_pages(pdf) == 2
    check_page_bound(pdf, DocFormat.PDF, 2)  # at the limit: accepted
    lying = pdf.replace(b"/Count 2", b"/Count 900000")
    assert pdf_declared_pages(lying) == 900_000
    error = refusal(lambda: check_page_bound(lying, DocFormat.PDF, 2_000))
    assert error.code == ErrorCode.FILE_TOO_LARGE and "900,000 pages" in error.message
    assert refusal(lambda: extract_document(lying, DocFormat.PDF)).code == ErrorCode.FILE_TOO_LARGE


def test_an_animated_png_declaring_too_many_frames_is_refused_from_its_header() -> None:
    frames = [Image.new("L", (8, 8), shade) for shade in (0, 255, 128)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "PNG", save_all=True, append_images=frames[1:])
    assert png_frame_count(buffer.getvalue()) == 3
    check_page_bound(buffer.getvalue(), DocFormat.PNG, 3)
    error = refusal(lambda: check_page_bound(buffer.getvalue(), DocFormat.PNG, 2))
    assert error.code == ErrorCode.FILE_TOO_LARGE and "3 pages" in error.message
    assert png_frame_count(image_bytes([render_page(["still"])], "PNG")) == 1


@pytest.mark.parametrize("fmt", ["GIF", "WEBP"])
def test_gif_and_webp_animations_are_refused_before_any_decoder(fmt: str) -> None:
    frames = [Image.new("L", (8, 8), shade) for shade in (0, 255)]
    buffer = io.BytesIO()
    frames[0].save(buffer, fmt, save_all=True, append_images=frames[1:])
    error = refusal(lambda: detect_format(buffer.getvalue(), f"anim.{fmt.lower()}", None))
    assert error.code == ErrorCode.UNSUPPORTED_FORMAT


async def test_one_workspace_cannot_hold_every_extractor_slot() -> None:
    slots = FairSlots(size=3, per_owner=2)
    entered: list[str] = []
    release = anyio.Event()

    async def extract(owner: str) -> None:
        async with slots.hold(owner):
            entered.append(owner)
            await release.wait()

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(extract, "alice")
        await anyio.wait_all_tasks_blocked()
        assert (slots.held("alice"), slots.waiting("alice")) == (2, 2)
        tg.start_soon(extract, "bob")  # arrives after alice's queue, served before it
        await anyio.wait_all_tasks_blocked()
        assert slots.held("bob") == 1 and entered == ["alice", "alice", "bob"]
        release.set()
    assert entered.count("alice") == 4


async def test_a_freed_slot_goes_to_the_waiting_workspace_holding_fewest() -> None:
    slots = FairSlots(size=2, per_owner=2)
    order: list[str] = []
    gates = {name: anyio.Event() for name in ("a1", "a2", "a3", "b1")}

    async def extract(owner: str, name: str) -> None:
        async with slots.hold(owner):
            order.append(name)
            await gates[name].wait()

    async with anyio.create_task_group() as tg:
        for owner, name in (("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1")):
            tg.start_soon(extract, owner, name)
            await anyio.wait_all_tasks_blocked()
        assert order == ["a1", "a2"]
        gates["a1"].set()
        await anyio.wait_all_tasks_blocked()
        assert order == ["a1", "a2", "b1"]  # b holds none: its turn before a's third file
        for gate in gates.values():
            gate.set()
    assert order[-1] == "a3"


async def test_a_call_cancelled_while_waiting_gives_up_its_place() -> None:
    slots = FairSlots(size=1, per_owner=1)
    release = anyio.Event()

    async def holder() -> None:
        async with slots.hold("a"):
            await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await anyio.wait_all_tasks_blocked()
        with anyio.move_on_after(0.05):
            async with slots.hold("b"):
                pytest.fail("b got a slot that a holds")
        assert slots.waiting() == 0
        release.set()
    async with slots.hold("b"):
        assert slots.held("b") == 1
    assert slots.held("b") == 0


async def test_a_cancelled_call_keeps_its_slot_until_its_thread_is_done() -> None:
    slots = FairSlots(size=2, per_owner=1)
    limiter = anyio.CapacityLimiter(4)
    parsing = threading.Event()
    finish = threading.Event()

    def slow_parse() -> str:
        parsing.set()
        finish.wait(10)
        return "text"

    with anyio.move_on_after(5) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: slots.run_in_thread("mallory", slow_parse, limiter=limiter))
            await anyio.to_thread.run_sync(parsing.wait, 5)
            tg.cancel_scope.cancel()  # the caller gives up; the parse goes on
    assert not scope.cancelled_caught
    assert slots.held("mallory") == 1  # still busy: a second file of mallory's must wait
    assert await slots.run_in_thread("bob", lambda: "bob's", limiter=limiter) == "bob's"
    finish.set()
    with anyio.fail_after(5):
        while slots.held("mallory"):
            await anyio.sleep(0.01)


async def test_a_call_cancelled_before_its_thread_starts_gives_its_slot_back() -> None:
    slots = FairSlots(size=1, per_owner=1)
    limiter = anyio.CapacityLimiter(1)
    ran: list[str] = []
    busy = anyio.Event()

    async def occupy_the_only_thread() -> None:
        async with limiter:
            await busy.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(occupy_the_only_thread)
        await anyio.wait_all_tasks_blocked()
        with anyio.move_on_after(0.1):  # no thread free: the call waits for one, holding its slot
            await slots.run_in_thread("mallory", lambda: ran.append("mallory"), limiter=limiter)
        busy.set()
    assert slots.held("mallory") == 0 and ran == []
    await slots.run_in_thread("bob", lambda: ran.append("bob"), limiter=limiter)
    assert ran == ["bob"]
