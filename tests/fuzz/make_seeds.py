#!/usr/bin/python3
"""Writes the fuzzers' seed corpus (tests/fuzz/corpus/*): valid header frames of every message
type (encoded by protoc from text), valid compressed payloads of every index and value mode,
config files, IDX data pairs, model profiles with plans and the coordinator's registrations
(`make_seeds.py idx`, `make_seeds.py model` or `make_seeds.py register` writes only those).
Re-run after a wire or config change; the output is committed."""
import os
import struct
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CORPUS = os.path.join(HERE, "corpus")


def write(kind, name, data):
    os.makedirs(os.path.join(CORPUS, kind), exist_ok=True)
    with open(os.path.join(CORPUS, kind, name), "wb") as f:
        f.write(data)


def encode(message, text):
    return subprocess.run(["protoc", "--encode=psrt.wire." + message, "-I",
                           os.path.join(ROOT, "proto"), "psrt.proto"], input=text.encode(),
                          capture_output=True, check=True).stdout


def header(text):
    return subprocess.run(["protoc", "--encode=psrt.wire.Header", "-I", os.path.join(ROOT, "proto"),
                           "psrt.proto"], input=text.encode(), capture_output=True,
                          check=True).stdout


def frames(sizes, hdr):
    # fuzz_header.cc's input: frame count, u16 sizes, then the header frame.
    return bytes([len(sizes)]) + b"".join(struct.pack("<H", s) for s in sizes) + hdr


def headers():
    base = 'version: 1 job_id: "fuzz-job" '
    write("header", "heartbeat", frames([], header(base + "role: WORKER rank: 1 type: HEARTBEAT")))
    write("header", "register", frames([], header(
        base + 'role: WORKER rank: 0 type: REGISTER register { address: "tcp://127.0.0.1:5555" '
        'tensors { key: 0 name: "fc1.w" num_elements: 100 layer: 0 } pid: 7 }')))
    write("header", "membership", frames([], header(
        base + 'role: SERVER rank: 0 type: MEMBERSHIP membership { num_servers: 1 num_workers: 1 '
        'server_addresses: "tcp://127.0.0.1:1" chunks { key: 0 offset: 0 length: 100 server: 0 } }')))
    write("header", "barrier", frames([], header(
        base + 'role: WORKER rank: 2 type: BARRIER barrier { name: "start" }')))
    write("header", "push", frames([400], header(
        base + "role: WORKER rank: 1 type: PUSH key: 3 offset: 0 length: 100 iteration: 5 "
        "priority: 3 codec: CODEC_NONE num_elements: 100 payload_bytes: 400 seq: 9")))
    write("header", "push_topk", frames([64], header(
        base + "role: WORKER rank: 1 type: PUSH key: 3 offset: 1024 length: 100 iteration: 5 "
        "codec: CODEC_TOPK num_elements: 100 payload_bytes: 64 seq: 10")))
    write("header", "params", frames([400], header(
        base + "role: SERVER rank: 0 type: PARAMS key: 0 offset: 0 length: 100 iteration: 6 "
        "num_elements: 100 payload_bytes: 400 seq: 1")))
    write("header", "error", frames([], header(
        base + 'role: SERVER rank: 1 type: ERROR error { code: 7 message: "out of step" about: PUSH }')))
    write("header", "routing_id", frames([], b"w12"))


def payload(codec, index_mode, value_mode, log_range, length, indices, values, scale=None):
    count = len(values) if value_mode != 2 else len(values)
    if index_mode == 0:
        idx = b""
    elif index_mode == 1:
        idx, prev = b"", None
        for i in indices:
            v = i if prev is None else i - prev - 1
            prev = i
            while True:
                b = v & 0x7F
                v >>= 7
                idx += bytes([b | (0x80 if v else 0)])
                if not v:
                    break
    else:
        bits = bytearray((length + 7) // 8)
        for i in indices:
            bits[i // 8] |= 1 << (i % 8)
        idx = bytes(bits)
    out = struct.pack("<BBBBB3xIII", codec, 1, index_mode, value_mode, log_range, length, count,
                      len(idx)) + idx
    if value_mode == 0:
        out += b"".join(struct.pack("<f", v) for v in values)
    elif value_mode == 1:
        out += bytes(values)
    else:
        signs = bytearray((count + 7) // 8)
        for j, v in enumerate(values):
            if v < 0:
                signs[j // 8] |= 1 << (j % 8)
        out += bytes(signs)
    if scale is not None:
        out += struct.pack("<f", scale)
    return out


def payloads():
    write("payload", "none_dense", payload(0, 0, 0, 0, 8, [], [0.5, -1, 2, 0, 1e-3, 3, -4, 7]))
    write("payload", "topk_varint", payload(4, 1, 0, 0, 300, [3, 4, 130, 299], [1, -2, 3.5, 0.25]))
    write("payload", "graddrop_bitmap", payload(3, 2, 0, 0, 20, [0, 9, 19], [1.5, -2, 3]))
    write("payload", "signsgd_dense", payload(2, 0, 2, 0, 10, [], [1, -1] * 5, scale=0.01))
    write("payload", "laco_log8", payload(1, 1, 1, 16, 50, [1, 7, 49], [0x05, 0x87, 0x10], scale=0.5))
    write("payload", "laco_fp32", payload(1, 0, 0, 0, 4, [], [1, 2, 3, 4]))
    write("payload", "laco_ternary", payload(1, 1, 2, 0, 40, [2, 5, 39], [1, -1, 1], scale=0.25))


def checkpoint(job_id, rank, servers, workers, iteration, chunks, optimizer=b"sgd", version=2):
    # server/checkpoint_file.h's layout; chunks: (key, offset, params, m, v, published).
    def floats(v):
        return struct.pack("<Q", len(v)) + b"".join(struct.pack("<f", x) for x in v)
    out = b"PSRTCKPT" + struct.pack("<I", version) + struct.pack("<I", len(job_id)) + job_id
    out += struct.pack("<III", rank, servers, workers)
    if version >= 2:
        out += struct.pack("<I", len(optimizer)) + optimizer
    out += struct.pack("<QI", iteration, len(chunks))
    for key, offset, params, m, v, published in chunks:
        out += struct.pack("<IQQQQ", key, offset, len(params), iteration, iteration)
        out += floats(params) + floats(m) + floats(v) + floats(published)
    return out + struct.pack("<I", zlib.crc32(out))


def checkpoints():
    sgd = [(0, 0, [0.5, -1, 2], [0.1, 0.2, 0.3], [], []),
           (2, 1024, [1, 2, 3, 4, 5], [0, 0, 0, 0, 0], [], [])]
    write("checkpoint", "sgd", checkpoint(b"ckpt", 1, 2, 3, 40, sgd))
    write("checkpoint", "sgd_version1", checkpoint(b"ckpt", 1, 2, 3, 40, sgd, version=1))
    write("checkpoint", "adam_published", checkpoint(b"job-a", 0, 1, 1, 7, [
        (1, 0, [3, 4], [0.5, 0.5], [1e-3, 2e-3], [3, 4])], optimizer=b"adam"))
    write("checkpoint", "empty", checkpoint(b"x", 0, 1, 1, 1, []))


def configs():
    for name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if name.endswith(".yaml"):
            with open(os.path.join(ROOT, "examples", name), "rb") as f:
                write("config", name, f.read())
    write("config", "flow.yaml", b"cluster: {servers: 2, workers: 3}\njob: {id: x, iterations: 5}\n"
          b"compression: {codec: laco, density: 0.05, momentum_correction: true}\n"
          b"checkpoint: {dir: /tmp/psrt-fuzz-ckpt, every: 10, keep: 3}\n"
          b"scheduler: {mode: preemptive, priority: [3, 2, 1, 0]}\n")
    write("config", "sets.yaml", b"--set job.id=\n--set model.hidden=[8, 4]\n--set a.b.c=1\n"
          b"job: {iterations: 3}\n")
    write("config", "anchors.yaml", b"a: &x {servers: 1}\ncluster: *x\nmodel: {hidden: [1, 2, 3]}\n")


def idx_pair(images, labels):
    # fuzz_idx.cc's input: the image file's length (u16, little-endian), the image file, the labels.
    return struct.pack("<H", len(images)) + images + labels


def idx_files():
    pixels = bytes(range(18))
    images = struct.pack(">IIII", 2051, 3, 2, 3) + pixels
    labels = struct.pack(">II", 2049, 3) + bytes([7, 0, 9])
    write("idx", "plain", idx_pair(images, labels))
    # gzip with a fixed header time (mtime 0), so that the seed is the same on every run
    write("idx", "gzip", idx_pair(gzip_bytes(images), gzip_bytes(labels)))
    write("idx", "one_pixel", idx_pair(struct.pack(">IIII", 2051, 1, 1, 1) + b"\xff",
                                       struct.pack(">II", 2049, 1) + b"\x04"))
    # colour: idx4 (magic 2052), 2 images of 1x2 pixels with 3 channels, (H, W, C)
    write("idx", "colour", idx_pair(struct.pack(">IIIII", 2052, 2, 1, 2, 3) + bytes(range(12)),
                                    struct.pack(">II", 2049, 2) + b"\x01\x00"))


def models():
    # fuzz_model.cc's input: a profile, then "---plan---" and a plan for it.
    profile = (b"name: tiny\nbatch_size: 8\nlayers:\n"
               b"  - {name: a, kind: linear, forward_ms: 1, backward_ms: 2,"
               b" tensors: [{name: a.weight, elements: 64}, {name: a.bias, elements: 8}]}\n"
               b"  - {name: b, kind: relu, forward_ms: 0.1, backward_ms: 0.1}\n"
               b"  - {name: c, kind: linear, forward_ms: 1, backward_ms: 2, inputs: [a, b],"
               b" tensors: [{name: c.weight, elements: 80}]}\n")
    plan = (b"model: tiny\nplacer: test\n"
            b"devices: [{name: d0, memory_gib: 1, gflops: 10},"
            b" {name: d1, memory_gib: 1, gflops: 20}]\n"
            b"stages:\n  - {device: d1, layers: [a, b]}\n  - {device: d0, layers: [c]}\n")
    write("model", "tiny_with_plan", profile + b"\n---plan---\n" + plan)
    with open(os.path.join(ROOT, "bench", "profiles", "lenet5.yaml"), "rb") as f:
        write("model", "lenet5", f.read())


def gzip_bytes(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def record(selector, reg, stage=None):
    # fuzz_register.cc's input: selector (bit 7 worker, bit 5 a StageInfo follows, bits 0-1 rank),
    # then length-prefixed REGISTER and StageInfo bytes.
    out = bytes([selector | (0x20 if stage is not None else 0)]) + struct.pack("<H", len(reg)) + reg
    return out + (struct.pack("<H", len(stage)) + stage if stage is not None else b"")


def registers():
    """Whole registrations of a 2-server, 2-worker job: data-parallel with worker 0's grouping
    plan, model-parallel with stage infos, and servers resuming a checkpoint."""
    tensors = ('tensors { key: 0 name: "fc1.w" num_elements: 5000 layer: 0 } '
               'tensors { key: 1 name: "fc1.b" num_elements: 50 layer: 0 } '
               'tensors { key: 2 name: "fc2.w" num_elements: 500 layer: 1 } '
               'tensors { key: 3 name: "fc2.b" num_elements: 10 layer: 1 } iterations: 100 ')
    plan = ('grouping { spec: "auto" search: "40 simulations in 5 ms, from size:4096" '
            'trial_iterations: 2 candidates { name: "auto" starts: 0 starts: 2 price_ms: 3.5 } '
            'candidates { name: "none" starts: 0 starts: 1 starts: 2 starts: 3 price_ms: 4 } }')
    def servers(extra=""):
        return (record(0, encode("Register", 'address: "tcp://127.0.0.1:1" ' + extra)) +
                record(1, encode("Register", 'address: "tcp://127.0.0.1:2" ' + extra)))
    write("register", "data-parallel", servers() +
          record(0x80, encode("Register", tensors + plan)) +
          record(0x81, encode("Register", tensors)))
    write("register", "stages", servers() +
          record(0x80, encode("Register", tensors),
                 encode("StageInfo", "stage: 0 stages: 2 replica: 0 keys: 0 keys: 1")) +
          record(0x81, encode("Register", tensors),
                 encode("StageInfo", 'stage: 1 stages: 2 replica: 0 address: "tcp://127.0.0.1:3" '
                                     'keys: 2 keys: 3')))
    write("register", "resume", servers("resume: true checkpoints: 10 checkpoints: 20") +
          record(0x80, encode("Register", tensors + "resume: true")) +
          record(0x81, encode("Register", tensors + "resume: true")))


if __name__ == "__main__":
    if sys.argv[1:] == ["idx"]:
        idx_files()
        sys.exit(0)
    if sys.argv[1:] == ["model"]:
        models()
        sys.exit(0)
    if sys.argv[1:] == ["register"]:
        registers()
        sys.exit(0)
    headers()
    payloads()
    checkpoints()
    configs()
    idx_files()
    models()
    registers()
    sys.exit(0)
