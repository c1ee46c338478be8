"""psrt_fit_calibration.fit against a synthetic simulator whose iteration time is linear in the
calibration's per-message and per-byte costs: measurements made with known factors (3x per
message, 0.5x per byte) must give those factors back, and the file written must hold the scaled
costs. Usage: fit_calibration_test.py DIR_WITH_psrt_fit_calibration.py"""

import os
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
import psrt_fit_calibration as fc  # noqa: E402

BASE = {"worker_message_us": 10.0, "server_message_us": 10.0,
        "worker_byte_ns": 2.0, "server_byte_ns": 2.0}


def synthetic_ms(messages, megabytes, costs):
    """A run of `messages` messages and `megabytes` MB per iteration, both I/O threads busy."""
    us = messages * (costs["worker_message_us"] + costs["server_message_us"])
    ns = megabytes * 1e6 * (costs["worker_byte_ns"] + costs["server_byte_ns"])
    return 50.0 + us / 1e3 + ns / 1e6


def main():
    # Runs of many small messages and of few large ones, so that the two factors can be told apart.
    shapes = [(2000, 1.0), (200, 10.0), (600, 4.0), (50, 20.0), (1200, 2.0)]
    truth = fc.scaled(BASE, 3.0, 0.5)
    runs = [("run%d" % i, synthetic_ms(m, mb, truth), (m, mb)) for i, (m, mb) in enumerate(shapes)]
    with tempfile.TemporaryDirectory() as work:
        base_path = os.path.join(work, "base.yaml")
        fc.write_costs(base_path, BASE, ["test base"])

        def simulate(args, cal):
            return synthetic_ms(args[0], args[1], fc.read_costs(cal))

        out = os.path.join(work, "fitted.yaml")
        a, b = fc.fit(base_path, runs, simulate, out, work, lambda line: print(line))
        assert abs(a - 3.0) < 0.03, "per-message factor %.4f, want 3" % a
        assert abs(b - 0.5) < 0.01, "per-byte factor %.4f, want 0.5" % b
        written = fc.read_costs(out)
        assert abs(written["worker_message_us"] - 30.0) < 0.3, written
        assert abs(written["server_byte_ns"] - 1.0) < 0.02, written
        text = open(out).read()
        assert "per-message costs times" in text and "runs fitted (5)" in text, text
    print("fit recovers the factors: %.4f per message, %.4f per byte" % (a, b))


if __name__ == "__main__":
    main()
