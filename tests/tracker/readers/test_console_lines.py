"""Console lines as captured in the wild: prefixes, colours, glued ranks, wraps, line endings, numbers."""

from __future__ import annotations

import math

import pytest

from tracker.readers.text import _lines
from tracker.readers.text._lines import lines, split_line, strip_prefixes
from tracker.readers.text._values import first_number, seconds, size_gib, stamp_time
from tracker.readers.text.megatron import read_runs as megatron_runs

ITERATION = (" iteration {step:8d}/    1000 | consumed samples: {samples:12d} | elapsed time per iteration "
             "(ms): 1631.0 | learning rate: 3.320000E-04 | global batch size:   288 | lm loss: {loss} | "
             "loss scale: 1.0 | grad norm: 1.761 | number of skipped iterations:   0 | "
             "number of nan iterations:   0 |")


def iteration(step: int, loss: str = "4.266078E+00") -> str:
    return ITERATION.format(step=step, samples=step * 288, loss=loss)


@pytest.mark.parametrize(("raw", "text", "label"), [
    ("31:  [2026-08-18 03:25:53.597513] iteration 1/2 |", " [2026-08-18 03:25:53.597513] iteration 1/2 |", "31"),
    (" 0: INFO:megatron.core.timers:(min, max) time across ranks (ms):", "(min, max) time across ranks (ms):", "0"),
    ("actor-multi-node-worker-0: step: 5  loss: 2.0", "step: 5  loss: 2.0", "actor-multi-node-worker-0"),
    ("node017: {'loss': 1.5}", "{'loss': 1.5}", "node017"),
    ("[rank3]: Traceback (most recent call last):", "Traceback (most recent call last):", "3"),
    ("[default0]:[titan] 2025-06-01 12:00:00,123 - root - INFO - step: 1  loss: 9.1", "step: 1  loss: 9.1", "0"),
    ("p4_v2_perf/0 iteration 3/10 |", "iteration 3/10 |", None),
    ("[2024-04-21 02:45:40,722] [INFO] [logging.py:96:log_dist] [Rank 0] step=3, skipped=0",
     "[Rank 0] step=3, skipped=0", None),
    ("[INFO:swift] Using deepspeed: {}", "Using deepspeed: {}", None),
    ("step: 20  loss: 11.83", "step: 20  loss: 11.83", None),  # a metric name is not a host label
    ("Train Loss: 7.4976 - Train Perplexity: 1803.70", "Train Loss: 7.4976 - Train Perplexity: 1803.70", None),
])
def test_launcher_labels_and_logger_headers_come_off(raw, text, label):
    stripped, found, _ = strip_prefixes(raw)
    assert (stripped, found) == (text, label)


def test_logger_timestamp_is_kept_for_wall_time():
    _, _, stamp = strip_prefixes("[2024-04-21 02:45:40,722] [INFO] [timer.py:260:stop] epoch=0")
    assert stamp == "2024-04-21 02:45:40,722"
    assert stamp_time(stamp) % 60 == pytest.approx(40.722)


def test_ansi_colours_are_removed():
    raw = "\x1b[31mstep:  2  \x1b[32mloss: 10.5000  \x1b[38;2;54;234;195mmemory: 48.87GiB(51.44%)\x1b[39m"
    assert split_line(raw)[0][0] == "step:  2  loss: 10.5000  memory: 48.87GiB(51.44%)"


def test_lines_of_ranks_glued_together_are_split():
    raw = ("[Rank 0] (after 2 iterations) memory (GB) | mem-max-allocated-gigabytes: 194.41 | "
           "mem-allocated-count: 433[Rank 3] (after 2 iterations) memory (GB) | mem-allocated-count: 12")
    pieces = [text for text, _, _ in split_line(raw)]
    assert pieces == ["[Rank 0] (after 2 iterations) memory (GB) | mem-max-allocated-gigabytes: 194.41 | "
                      "mem-allocated-count: 433", "[Rank 3] (after 2 iterations) memory (GB) | mem-allocated-count: 12"]
    raw = "number of nan iterations:   0 |Number of parameters in transformer block in billions:  0.90"
    assert [t for t, _, _ in split_line(raw)][1].startswith("Number of parameters")


def test_windows_endings_tqdm_carriage_returns_and_invalid_bytes(tmp_path):
    path = tmp_path / "log.txt"
    path.write_bytes(b"first\r\n 10%|#  | 1/10 [00:01<]\r 20%|## | 2/10 [00:02<]\r\n\xff\xfebad\r\nlast")
    texts = [line.text for line in lines(path)]
    assert texts == ["first", " 10%|#  | 1/10 [00:01<]", " 20%|## | 2/10 [00:02<]", "\ufffd\ufffdbad", "last"]
    assert [line.number for line in lines(path)] == [1, 2, 2, 3, 4]


def test_an_endless_line_is_cut_so_memory_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(_lines, "CHUNK", 1024)
    path = tmp_path / "log.txt"
    path.write_bytes(b"x" * 200_000 + b"\nnext\n")
    texts = [line.text for line in lines(path)]
    assert len(texts[0]) == _lines.MAX_LINE and texts[1] == "next"


def test_numbers_as_logs_print_them():
    assert first_number("lm loss: 1.263599E+01") == pytest.approx(12.63599)
    assert first_number("tps: 4,376") == 4376
    assert math.isnan(first_number("loss nan"))
    assert first_number("grad norm: inf") == math.inf and first_number("x: -Infinity") == -math.inf
    assert size_gib("Tried to allocate 959.44 MiB") == pytest.approx(959.44 / 1024)
    assert size_gib("512 bytes") == pytest.approx(512 / 1024**3)
    assert seconds("0:00:24") == 24 and seconds("1 day, 2:03:04") == 93784
    assert seconds("1m 60s") == 120 and seconds("9h 45m 21s") == 35121 and seconds("17:52:38.15") == 64358.15


def test_srun_prefixed_log_with_a_wrapped_record(tmp_path):
    """srun splits long records and labels each piece: the pieces are joined back."""
    line = iteration(7)
    head, tail = line[:150], line[150:]
    path = tmp_path / "slurm-42.out"
    path.write_text(f" 0: ------------------------ arguments ------------------------\n"
                    f" 0:   num_layers ...................................... 16\n"
                    f" 0: -------------------- end of arguments ---------------------\n"
                    f"31: {iteration(6)}\n31: {head}\n31: {tail}\n31: {iteration(8)}\n")
    run = megatron_runs(path)[0]
    assert run.series["loss"].steps.tolist() == [6, 7, 8]
    assert run.series["grad_norm"].values.tolist() == [1.761] * 3
    assert run.shape.n_layers == 16


def test_wrapped_record_with_padding_inside_a_word(tmp_path):
    """Terminal copies sometimes pad a wrapped word ("MemA          llocated")."""
    from tracker.readers.text.deepspeed import read_runs

    path = tmp_path / "ds.log"
    path.write_text("epoch=0/micro_step=3/global_step=3, RunningAvgSamplesPerSec=74.6, CurrSamplesPerSec=74.6, "
                    "MemA          llocated=4.75GB, MaxMemAllocated=15.59GB\n")
    run = read_runs(path)[0]
    assert run.series["mem_peak_gib"].values.tolist() == [15.59]
    assert run.series["samples_per_s"].values.tolist() == [74.6]


def test_nan_inf_and_exponents_in_iteration_lines(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("\n".join([iteration(1, "1.258695E+01"), iteration(2, "nan"), iteration(3, "inf")]) + "\n")
    loss = megatron_runs(path)[0].series["loss"].values
    assert loss[0] == pytest.approx(12.58695) and math.isnan(loss[1]) and loss[2] == math.inf
