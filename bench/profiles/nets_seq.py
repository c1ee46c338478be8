"""Sequence models for gen_profiles.py: the GNMT-like LSTM and a BERT-base-like Transformer
encoder stack."""

from profile_net import Net


# ---------------------------------------------------------------- GNMT-like
GNMT_VOCAB = 32000
GNMT_HIDDEN = 1024
GNMT_SEQ = 50  # tokens per sample (source and target)


def lstm_params(n_in, h):
    return 4 * h * (n_in + h) + 8 * h  # W_ih, W_hh and PyTorch's two bias vectors


def gnmt():
    v, h, t = GNMT_VOCAB, GNMT_HIDDEN, GNMT_SEQ
    expected = (2 * v * h + 8 * lstm_params(h, h) + lstm_params(h, h) + 7 * lstm_params(2 * h, h)
                + 2 * h * h + h * v + v)
    net = Net("gnmt", "GNMT-like LSTM encoder-decoder: 32k-token embeddings, 8 encoder and 8 decoder "
              "LSTM layers of 1024, additive attention, 50 tokens per sample",
              "after Wu et al. 2016, 'Google's Neural Machine Translation System', section 3 "
              "(8+8 LSTM layers, residual connections from the third layer, attention from the "
              "bottom decoder layer fed to every upper decoder layer); unidirectional encoder and "
              "sizes chosen here, so this is GNMT-like, not the published model", expected)
    lstm_macs = lambda n_in: 4 * h * (n_in + h) * t
    net.add("enc.embedding", "embedding", 0, t * h, [("enc.embedding.weight", v * h)],
            flops=t * h, inputs=["input"])
    for i in range(1, 9):
        ins = ["enc.lstm%d" % (i - 1) if i > 1 else "enc.embedding"]
        if i >= 3:  # residual: the input is the sum of the two layers below
            ins.append("enc.lstm%d" % (i - 2))
        net.add("enc.lstm%d" % i, "lstm", lstm_macs(h), t * h,
                [("enc.lstm%d.weight" % i, 4 * h * 2 * h), ("enc.lstm%d.bias" % i, 8 * h)],
                inputs=ins)
    net.add("dec.embedding", "embedding", 0, t * h, [("dec.embedding.weight", v * h)],
            flops=t * h, inputs=["input"])
    net.add("dec.lstm1", "lstm", lstm_macs(h), t * h,
            [("dec.lstm1.weight", 4 * h * 2 * h), ("dec.lstm1.bias", 8 * h)])
    # additive attention over the encoder's 50 states for each of the 50 decoder steps
    net.add("attention", "attention", 2 * h * h * t + t * t * h, t * h,
            [("attention.query.weight", h * h), ("attention.key.weight", h * h)],
            inputs=["enc.lstm8", "dec.lstm1"])
    for i in range(2, 9):
        ins = ["dec.lstm%d" % (i - 1), "attention"]
        if i >= 3:
            ins.append("dec.lstm%d" % (i - 2))
        net.add("dec.lstm%d" % i, "lstm", lstm_macs(2 * h), t * h,
                [("dec.lstm%d.weight" % i, 4 * h * 3 * h), ("dec.lstm%d.bias" % i, 8 * h)],
                inputs=ins)
    net.add("projection", "linear", h * v * t, t * v,
            [("projection.weight", h * v), ("projection.bias", v)])
    return net


# ---------------------------------------------------------------- Transformer encoder stack
BERT_VOCAB, BERT_HIDDEN, BERT_LAYERS, BERT_SEQ, BERT_POSITIONS = 30522, 768, 12, 128, 512


def transformer():
    v, h, t = BERT_VOCAB, BERT_HIDDEN, BERT_SEQ
    per_layer = 4 * (h * h + h) + 2 * h + (h * 4 * h + 4 * h) + (4 * h * h + h) + 2 * h
    expected = (v + BERT_POSITIONS + 2) * h + 2 * h + BERT_LAYERS * per_layer + h * h + h
    net = Net("transformer", "BERT-base-like Transformer encoder stack: 12 blocks of 768 (12 heads, "
              "feed-forward 3072), 30522-token embeddings (94 MB, the first tensor in forward "
              "order), 128 tokens per sample",
              "after Devlin et al. 2019, 'BERT', BERT-base (L=12, H=768, A=12) as Hugging Face "
              "BertModel with its pooler: 109,482,240 parameters; attention FLOPs include the "
              "scores and the weighted sum", expected)
    net.add("embeddings", "embedding", 0, t * h,
            [("embeddings.word_embeddings.weight", v * h),
             ("embeddings.position_embeddings.weight", BERT_POSITIONS * h),
             ("embeddings.token_type_embeddings.weight", 2 * h),
             ("embeddings.LayerNorm.weight", h), ("embeddings.LayerNorm.bias", h)],
            flops=3 * t * h, inputs=["input"])
    for i in range(BERT_LAYERS):
        p = "encoder.layer.%d" % i
        att = [(p + ".attention.self.%s.%s" % (m, w), h * h if w == "weight" else h)
               for m in ("query", "key", "value") for w in ("weight", "bias")]
        att += [(p + ".attention.output.dense.weight", h * h), (p + ".attention.output.dense.bias", h),
                (p + ".attention.output.LayerNorm.weight", h),
                (p + ".attention.output.LayerNorm.bias", h)]
        net.add(p + ".attention", "attention", 4 * h * h * t + 2 * t * t * h, t * h, att)
        net.add(p + ".ffn", "linear", 2 * h * 4 * h * t, t * h,
                [(p + ".intermediate.dense.weight", 4 * h * h), (p + ".intermediate.dense.bias", 4 * h),
                 (p + ".output.dense.weight", 4 * h * h), (p + ".output.dense.bias", h),
                 (p + ".output.LayerNorm.weight", h), (p + ".output.LayerNorm.bias", h)])
    net.add("pooler", "linear", h * h, h, [("pooler.dense.weight", h * h), ("pooler.dense.bias", h)])
    return net
