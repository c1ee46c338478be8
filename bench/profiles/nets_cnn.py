"""Convolutional networks for gen_profiles.py: VGG-16, ResNet-50, Inception-v3, DenseNet-121,
LeNet-5 and the quickstart MLP."""

from profile_net import Net, conv_out


# ---------------------------------------------------------------- VGG-16
def vgg16():
    net = Net("vgg16", "VGG-16 (configuration D), 224x224x3 input, 1000 classes",
              "Simonyan & Zisserman 2014, 'Very Deep Convolutional Networks for Large-Scale "
              "Image Recognition', table 1 column D; 138,357,544 parameters (as torchvision "
              "vgg16)", 138357544)
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    size, cin, block, idx = 224, 3, 1, 1
    for v in cfg:
        if v == "M":
            size //= 2
            block += 1
            idx = 1
            continue
        name = "conv%d_%d" % (block, idx)
        macs = size * size * v * cin * 9
        net.add(name, "conv2d", macs, size * size * v,
                [(name + ".weight", v * cin * 9), (name + ".bias", v)])
        cin = v
        idx += 1
    fin = cin * size * size  # 512 * 7 * 7
    for name, n_in, n_out in (("fc6", fin, 4096), ("fc7", 4096, 4096), ("fc8", 4096, 1000)):
        net.add(name, "linear", n_in * n_out, n_out,
                [(name + ".weight", n_in * n_out), (name + ".bias", n_out)])
    return net


# ---------------------------------------------------------------- ResNet-50
def conv_bn(net, name, cin, cout, k, stride, pad, size, bn_names=None, kh=None, kw=None,
            inputs=None):
    """conv (no bias) + batch norm (gamma, beta); returns the output size (square maps)."""
    kh = k if kh is None else kh
    kw = k if kw is None else kw
    out = conv_out(size, k, stride, pad)
    conv_w, bn_w, bn_b = bn_names or (name + ".weight", name + ".bn.weight", name + ".bn.bias")
    macs = out * out * cout * cin * kh * kw
    net.add(name, "conv2d", macs, out * out * cout,
            [(conv_w, cout * cin * kh * kw), (bn_w, cout), (bn_b, cout)], inputs=inputs)
    return out


def resnet50():
    net = Net("resnet50", "ResNet-50 (v1.5: stride in the 3x3 conv), 224x224x3 input, 1000 classes",
              "He et al. 2015, 'Deep Residual Learning for Image Recognition', table 1 (50-layer); "
              "25,557,032 trained parameters as torchvision resnet50: conv weights, batch-norm "
              "gamma and beta, fc weight and bias. Batch-norm running mean/variance are excluded: "
              "they are not trained and not pushed as gradients", 25557032)
    size = conv_bn(net, "conv1", 3, 64, 7, 2, 3, 224, ("conv1.weight", "bn1.weight", "bn1.bias"))
    size = conv_out(size, 3, 2, 1)  # max pool
    cin = 64
    block_in = "conv1"  # the max pool is folded into conv1
    for li, (planes, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2),
                                                   (512, 3, 2)), start=1):
        for b in range(blocks):
            s = stride if b == 0 else 1
            p = "layer%d.%d" % (li, b)
            o1 = conv_bn(net, p + ".conv1", cin, planes, 1, 1, 0, size,
                         (p + ".conv1.weight", p + ".bn1.weight", p + ".bn1.bias"),
                         inputs=[block_in])
            o2 = conv_bn(net, p + ".conv2", planes, planes, 3, s, 1, o1,
                         (p + ".conv2.weight", p + ".bn2.weight", p + ".bn2.bias"))
            conv_bn(net, p + ".conv3", planes, planes * 4, 1, 1, 0, o2,
                    (p + ".conv3.weight", p + ".bn3.weight", p + ".bn3.bias"))
            main = net.last()
            shortcut = block_in
            if b == 0:
                conv_bn(net, p + ".downsample", cin, planes * 4, 1, s, 0, size,
                        (p + ".downsample.0.weight", p + ".downsample.1.weight",
                         p + ".downsample.1.bias"), inputs=[block_in])
                shortcut = net.last()
            # the skip connection: relu(conv3 + shortcut), the block's output
            block_in = net.join(p + ".add", "add", [main, shortcut], o2 * o2 * planes * 4)
            cin = planes * 4
            size = o2
    net.add("fc", "linear", 2048 * 1000, 1000, [("fc.weight", 2048 * 1000), ("fc.bias", 1000)],
            inputs=[block_in])  # the global average pool is folded into fc
    return net


# ---------------------------------------------------------------- Inception-v3
class Inception:
    """torchvision's Inception3 without the auxiliary classifier; BasicConv2d = conv (no bias) +
    batch norm (gamma, beta). Spatial maps are square except inside the factorised 1xn / nx1
    convolutions, which keep the size (padding (0, n//2) / (n//2, 0)).

    The graph: every branch of a block reads the block's input (`self.x`, the previous block's
    concatenation), convs within a branch form a chain, and a parameter-free "concat" layer joins
    the branch ends. Pooling is folded into the layer after it (branch_pool's average pool) or into
    the concat (the max-pool branches of Mixed_6a / Mixed_7a, which read the block input)."""

    def __init__(self, net):
        self.net = net
        self.x = None  # the current block input (None: the previous layer)

    def conv(self, name, cin, cout, size, k=1, stride=1, pad=0, kh=None, kw=None, first=False):
        kh = k if kh is None else kh
        kw = k if kw is None else kw
        if kh == kw:
            out = conv_out(size, kh, stride, pad)
        else:  # factorised: "same" padding along the long side, stride 1
            out = size
        macs = out * out * cout * cin * kh * kw
        self.net.add(name, "conv2d", macs, out * out * cout,
                     [(name + ".conv.weight", cout * cin * kh * kw), (name + ".bn.weight", cout),
                      (name + ".bn.bias", cout)],
                     inputs=[self.x] if first and self.x else None)
        return out

    def branch(self, *convs):
        """Each conv is (name, cin, cout, size, k, stride, pad, kh, kw) as keywords; the first
        reads the block input. Returns (last layer name, output size)."""
        out = None
        for i, c in enumerate(convs):
            out = self.conv(first=(i == 0), **c)
        return self.net.last(), out

    def concat(self, p, ends, channels, size):
        self.x = self.net.join(p + ".concat", "concat", ends, channels * size * size)
        return channels

    def block_a(self, p, cin, pool_features, size):
        b = self.branch
        e = [b(dict(name=p + ".branch1x1", cin=cin, cout=64, size=size))[0],
             b(dict(name=p + ".branch5x5_1", cin=cin, cout=48, size=size),
               dict(name=p + ".branch5x5_2", cin=48, cout=64, size=size, k=5, pad=2))[0],
             b(dict(name=p + ".branch3x3dbl_1", cin=cin, cout=64, size=size),
               dict(name=p + ".branch3x3dbl_2", cin=64, cout=96, size=size, k=3, pad=1),
               dict(name=p + ".branch3x3dbl_3", cin=96, cout=96, size=size, k=3, pad=1))[0],
             b(dict(name=p + ".branch_pool", cin=cin, cout=pool_features, size=size))[0]]
        return self.concat(p, e, 64 + 64 + 96 + pool_features, size)

    def block_b(self, p, cin, size):
        b = self.branch
        e0, out = b(dict(name=p + ".branch3x3", cin=cin, cout=384, size=size, k=3, stride=2))
        e1 = b(dict(name=p + ".branch3x3dbl_1", cin=cin, cout=64, size=size),
               dict(name=p + ".branch3x3dbl_2", cin=64, cout=96, size=size, k=3, pad=1),
               dict(name=p + ".branch3x3dbl_3", cin=96, cout=96, size=size, k=3, stride=2))[0]
        return self.concat(p, [e0, e1, self.x], 384 + 96 + cin, out), out

    def block_c(self, p, cin, c7, size):
        b = self.branch
        e = [b(dict(name=p + ".branch1x1", cin=cin, cout=192, size=size))[0],
             b(dict(name=p + ".branch7x7_1", cin=cin, cout=c7, size=size),
               dict(name=p + ".branch7x7_2", cin=c7, cout=c7, size=size, kh=1, kw=7),
               dict(name=p + ".branch7x7_3", cin=c7, cout=192, size=size, kh=7, kw=1))[0],
             b(dict(name=p + ".branch7x7dbl_1", cin=cin, cout=c7, size=size),
               dict(name=p + ".branch7x7dbl_2", cin=c7, cout=c7, size=size, kh=7, kw=1),
               dict(name=p + ".branch7x7dbl_3", cin=c7, cout=c7, size=size, kh=1, kw=7),
               dict(name=p + ".branch7x7dbl_4", cin=c7, cout=c7, size=size, kh=7, kw=1),
               dict(name=p + ".branch7x7dbl_5", cin=c7, cout=192, size=size, kh=1, kw=7))[0],
             b(dict(name=p + ".branch_pool", cin=cin, cout=192, size=size))[0]]
        return self.concat(p, e, 768, size)

    def block_d(self, p, cin, size):
        b = self.branch
        e0, out = b(dict(name=p + ".branch3x3_1", cin=cin, cout=192, size=size),
                    dict(name=p + ".branch3x3_2", cin=192, cout=320, size=size, k=3, stride=2))
        e1 = b(dict(name=p + ".branch7x7x3_1", cin=cin, cout=192, size=size),
               dict(name=p + ".branch7x7x3_2", cin=192, cout=192, size=size, kh=1, kw=7),
               dict(name=p + ".branch7x7x3_3", cin=192, cout=192, size=size, kh=7, kw=1),
               dict(name=p + ".branch7x7x3_4", cin=192, cout=192, size=size, k=3, stride=2))[0]
        return self.concat(p, [e0, e1, self.x], 320 + 192 + cin, out), out

    def block_e(self, p, cin, size):
        b = self.branch
        e = [b(dict(name=p + ".branch1x1", cin=cin, cout=320, size=size))[0]]
        stem = b(dict(name=p + ".branch3x3_1", cin=cin, cout=384, size=size))[0]
        for side in ("2a", "2b"):
            kh, kw = (1, 3) if side == "2a" else (3, 1)
            self.conv(p + ".branch3x3_" + side, 384, 384, size, kh=kh, kw=kw)
            self.net.layers[-1]["inputs"] = [stem]
            e.append(self.net.last())
        dbl = b(dict(name=p + ".branch3x3dbl_1", cin=cin, cout=448, size=size),
                dict(name=p + ".branch3x3dbl_2", cin=448, cout=384, size=size, k=3, pad=1))[0]
        for side in ("3a", "3b"):
            kh, kw = (1, 3) if side == "3a" else (3, 1)
            self.conv(p + ".branch3x3dbl_" + side, 384, 384, size, kh=kh, kw=kw)
            self.net.layers[-1]["inputs"] = [dbl]
            e.append(self.net.last())
        e.append(b(dict(name=p + ".branch_pool", cin=cin, cout=192, size=size))[0])
        return self.concat(p, e, 320 + 768 + 768 + 192, size)


INCEPTION_AUX_PARAMS = 128 * 768 + 2 * 128 + 768 * 128 * 25 + 2 * 768 + 768 * 1000 + 1000


def inception_v3():
    net = Net("inception_v3",
              "Inception-v3, 299x299x3 input, 1000 classes, without the auxiliary classifier",
              "Szegedy et al. 2015, 'Rethinking the Inception Architecture for Computer Vision', "
              "table 1, layer by layer as torchvision inception_v3: 23,834,568 trained parameters "
              "without the auxiliary classifier (27,161,264 with it; the aux head's 3,326,696 are "
              "left out here). Batch-norm running statistics are excluded", 23834568)
    m = Inception(net)
    s = m.conv("Conv2d_1a_3x3", 3, 32, 299, 3, 2)
    s = m.conv("Conv2d_2a_3x3", 32, 32, s, 3)
    s = m.conv("Conv2d_2b_3x3", 32, 64, s, 3, 1, 1)
    s = conv_out(s, 3, 2, 0)
    s = m.conv("Conv2d_3b_1x1", 64, 80, s)
    s = m.conv("Conv2d_4a_3x3", 80, 192, s, 3)
    s = conv_out(s, 3, 2, 0)
    m.x = net.last()  # the stem's max pool is folded into Conv2d_4a_3x3
    c = m.block_a("Mixed_5b", 192, 32, s)
    c = m.block_a("Mixed_5c", c, 64, s)
    c = m.block_a("Mixed_5d", c, 64, s)
    c, s = m.block_b("Mixed_6a", c, s)
    c = m.block_c("Mixed_6b", c, 128, s)
    c = m.block_c("Mixed_6c", c, 160, s)
    c = m.block_c("Mixed_6d", c, 160, s)
    c = m.block_c("Mixed_6e", c, 192, s)
    c, s = m.block_d("Mixed_7a", c, s)
    c = m.block_e("Mixed_7b", c, s)
    c = m.block_e("Mixed_7c", c, s)
    assert (c, s) == (2048, 8), (c, s)
    net.add("fc", "linear", 2048 * 1000, 1000, [("fc.weight", 2048 * 1000), ("fc.bias", 1000)])
    return net


# ---------------------------------------------------------------- DenseNet-121
def densenet121():
    net = Net("densenet121", "DenseNet-121 (growth 32, bottleneck 4x, compression 0.5), 224x224x3 "
              "input, 1000 classes: 364 mostly small parameter tensors",
              "Huang et al. 2017, 'Densely Connected Convolutional Networks', table 1 "
              "(DenseNet-121), as torchvision densenet121: 7,978,856 trained parameters (batch-norm "
              "gamma and beta, convolutions without bias, classifier); each pre-activation "
              "batch norm is folded into the convolution after it", 7978856)
    net.add("conv0", "conv2d", 112 * 112 * 64 * 3 * 49, 56 * 56 * 64,
            [("features.conv0.weight", 64 * 3 * 49), ("features.norm0.weight", 64),
             ("features.norm0.bias", 64)])  # the max pool is folded into conv0
    size, cin, block_in = 56, 64, "conv0"
    for b, layers in enumerate((6, 12, 24, 16), start=1):
        outs = [block_in]
        for j in range(1, layers + 1):
            p = "features.denseblock%d.denselayer%d" % (b, j)
            c = cin + 32 * (j - 1)
            net.add(p + ".conv1", "conv2d", size * size * 128 * c, size * size * 128,
                    [(p + ".norm1.weight", c), (p + ".norm1.bias", c), (p + ".conv1.weight", 128 * c)],
                    inputs=list(outs))
            outs.append(net.add(p + ".conv2", "conv2d", size * size * 32 * 128 * 9,
                                size * size * 32,
                                [(p + ".norm2.weight", 128), (p + ".norm2.bias", 128),
                                 (p + ".conv2.weight", 32 * 128 * 9)]))
        cin += 32 * layers
        if b == 4:
            block_in = outs
            break
        p = "features.transition%d" % b
        block_in = net.add(p, "conv2d", size * size * (cin // 2) * cin,
                           (size // 2) * (size // 2) * (cin // 2),
                           [(p + ".norm.weight", cin), (p + ".norm.bias", cin),
                            (p + ".conv.weight", (cin // 2) * cin)], inputs=list(outs))
        cin //= 2
        size //= 2
    net.add("classifier", "linear", cin * 1000, 1000,
            [("features.norm5.weight", cin), ("features.norm5.bias", cin),
             ("classifier.weight", cin * 1000), ("classifier.bias", 1000)], inputs=block_in)
    return net


# ---------------------------------------------------------------- LeNet-5
def lenet5():
    net = Net("lenet5", "LeNet-5 for 28x28x1 input (MNIST) with padding 2 on conv1, 10 classes",
              "LeCun et al. 1998, 'Gradient-Based Learning Applied to Document Recognition': "
              "conv1 6x1x5x5, conv2 16x6x5x5 (full connection), fc 400-120-84-10, with ReLU and "
              "2x2 max pooling; 61,706 parameters", 61706)
    net.add("conv1", "conv2d", 28 * 28 * 6 * 1 * 25, 28 * 28 * 6,
            [("conv1.weight", 6 * 25), ("conv1.bias", 6)])
    net.add("relu1", "relu", 0, 28 * 28 * 6, [], flops=28 * 28 * 6)
    net.add("pool1", "maxpool2d", 0, 14 * 14 * 6, [], flops=28 * 28 * 6)
    net.add("conv2", "conv2d", 10 * 10 * 16 * 6 * 25, 10 * 10 * 16,
            [("conv2.weight", 16 * 6 * 25), ("conv2.bias", 16)])
    net.add("relu2", "relu", 0, 10 * 10 * 16, [], flops=10 * 10 * 16)
    net.add("pool2", "maxpool2d", 0, 5 * 5 * 16, [], flops=10 * 10 * 16)
    for name, n_in, n_out, relu in (("fc1", 400, 120, True), ("fc2", 120, 84, True),
                                    ("fc3", 84, 10, False)):
        net.add(name, "linear", n_in * n_out, n_out,
                [(name + ".weight", n_in * n_out), (name + ".bias", n_out)])
        if relu:
            net.add("relu_" + name, "relu", 0, n_out, [], flops=n_out)
    return net


# ---------------------------------------------------------------- MLP
def mlp():
    net = Net("mlp", "The quickstart MLP 784-256-128-10 with ReLU between the linear layers",
              "examples/quickstart: fc1 784x256 + 256, fc2 256x128 + 128, fc3 128x10 + 10; "
              "235,146 parameters", 235146)
    for name, n_in, n_out, relu in (("fc1", 784, 256, True), ("fc2", 256, 128, True),
                                    ("fc3", 128, 10, False)):
        net.add(name, "linear", n_in * n_out, n_out,
                [(name + ".weight", n_in * n_out), (name + ".bias", n_out)])
        if relu:
            net.add("relu_" + name, "relu", 0, n_out, [], flops=n_out)
    return net
