"""The layer table gen_profiles.py renders: a network as a list of layers with their FLOPs,
activations, parameter tensors and inputs."""


class Net:
    def __init__(self, name, description, source, expected_params):
        self.name = name
        self.description = description
        self.source = source
        self.expected_params = expected_params
        self.layers = []

    def add(self, name, kind, macs, out_elems, tensors, flops=None, inputs=None):
        """Appends a layer; `inputs` names the producing layers ("input" is the model's input),
        None means the previous layer. Returns the name."""
        self.layers.append({
            "name": name,
            "kind": kind,
            "flops": 2.0 * macs if flops is None else float(flops),
            "act": int(out_elems),
            "tensors": [(n, int(e)) for n, e in tensors],
            "inputs": None if inputs is None else list(inputs),
        })
        return name

    def last(self):
        return self.layers[-1]["name"]

    def join(self, name, kind, inputs, out_elems):
        """A parameter-free layer that merges branches (residual add, concatenation)."""
        flops = out_elems * (len(inputs) - 1) if kind == "add" else 0
        return self.add(name, kind, 0, out_elems, [], flops=flops, inputs=inputs)

    def params(self):
        return sum(e for l in self.layers for _, e in l["tensors"])


def conv_out(size, k, stride, pad):
    return (size + 2 * pad - k) // stride + 1
