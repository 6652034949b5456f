#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Generate a `train` dialect training step for a GPT-like language model.

    tokens -> token embedding (train.gather) + learned position embedding
           -> L pre-LN transformer blocks (multi-head self-attention with
              q, k, v, out projections; MLP fc1, gelu, fc2; two residuals,
              two layer norms)
           -> final layer norm -> LM head (matmul to the vocabulary)
           -> cross_entropy over all batch * seq tokens (integer labels)

followed by the full hand-derived backward pass (the embedding gradient is a
train.scatter_add) and an AdamW update of every parameter. The blocks are
those of scripts/gen_transformer_block.py (imported, not copied); only the
first block's ops are commented.

Usage:
    python3 bench/gen_gpt.py --layers 12 --output /tmp/gpt12.mlir
    python3 bench/gen_gpt.py --layers 2 --hidden 16 --heads 2 --seq 8 \\
        --batch 2 --vocab 32         # prints to stdout

Only the Python standard library is used.
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "scripts"))
import gen_transformer_block as tb  # noqa: E402


def gpt_param_specs(layers, dims, vocab):
    """Every parameter in model order: (SSA stem, train.name, shape)."""
    H = dims.H
    specs = [("wte", "wte.weight", (vocab, H)),
             ("wpe", "wpe.weight", (dims.S, H))]
    for i in range(layers):
        specs += [(f"l{i}_{stem}", f"blocks.{i}.{name}", shape)
                  for stem, name, shape in tb.block_param_specs(H, dims.FF)]
    specs += [("lnf_w", "ln_f.weight", (H,)),
              ("lnf_b", "ln_f.bias", (H,)),
              ("lm_head", "lm_head.weight", (vocab, H))]
    return specs


def block_params(P, i, dims):
    """The values of block i's parameters keyed by their block stems."""
    return {stem: P[f"l{i}_{stem}"]
            for stem, _, _ in tb.block_param_specs(dims.H, dims.FF)}


def generate(layers, dims, vocab, command):
    B, S, H = dims.B, dims.S, dims.H
    b = tb.Builder()

    param_specs = gpt_param_specs(layers, dims, vocab)
    P, state, arg_lines = tb.declare_state(b, param_specs)
    tokens = b.arg("tokens", (B, S), "i32")
    labels = b.arg("labels", (B, S), "i32")
    lr = b.arg("lr", ())
    arg_lines.append(f"    {tokens.ref}: {tokens.type} "
                     f"{tb.role_attrs('input', 'tokens')}")
    arg_lines.append(f"    {labels.ref}: {labels.type} "
                     f"{tb.role_attrs('label', 'labels')}")
    arg_lines.append(f"    {lr.ref}: {lr.type} {tb.role_attrs('hyper', 'lr')}")

    # ====================================================================
    # Forward
    # ====================================================================
    b.comment("==================================================== Forward")
    b.comment("Embeddings: x0 = wte[tokens] + wpe ([S, H] broadcast over "
              "the batch).")
    tok = b.gather("tok_emb", P["wte"], tokens)
    x = b.add("x0", tok, P["wpe"])
    saved = []
    for i in range(layers):
        b.explain = True
        b.blank()
        b.comment(f"---------------------------------------- block {i} "
                  f"(blocks.{i}.*)")
        b.explain = i == 0
        x, s = tb.block_forward(b, x, block_params(P, i, dims), dims,
                                prefix=f"l{i}_")
        saved.append(s)
    b.explain = True
    b.blank()
    b.comment("Final layer norm, LM head (no bias) to the vocabulary, and "
              f"cross-entropy averaged over all B*S = {dims.BS} tokens.")
    lnf, lnf_mean, lnf_rstd = b.layer_norm("lnf", x, P["lnf_w"], P["lnf_b"],
                                           2)
    logits = b.matmul("logits", lnf, P["lm_head"], transpose_rhs=True)
    loss = b.cross_entropy("loss", logits, labels)

    # ====================================================================
    # Backward
    # ====================================================================
    b.blank()
    b.comment("=================================================== Backward")
    b.comment("d loss / d logits = (softmax(logits) - one_hot(labels)) / (B*S).")
    one = b.constant("one", 1.0)
    d_logits = b.cross_entropy_backward("d_logits", one, logits, labels)
    b.comment("LM head: d_lm_head = d_logits^T @ lnf over the B*S rows, "
              "d_lnf = d_logits @ lm_head.")
    d_lm_head = b.matmul("d_lm_head", b.flat(d_logits), b.flat(lnf),
                         transpose_lhs=True)
    d_lnf = b.matmul("d_lnf", d_logits, P["lm_head"])
    b.comment("Final layer norm backward: the gradient of the last block's "
              "output.")
    d_x, d_lnf_w, d_lnf_b = b.layer_norm_backward(
        ["d_lnf_x", "d_lnf_w", "d_lnf_b"], d_lnf, x, lnf_mean, lnf_rstd,
        P["lnf_w"], 2)
    grads = {"lm_head": d_lm_head, "lnf_w": d_lnf_w, "lnf_b": d_lnf_b}
    for i in reversed(range(layers)):
        b.explain = True
        b.blank()
        b.comment(f"---------------------------------------- block {i} "
                  "backward")
        b.explain = i == layers - 1
        block_grads, d_x = tb.block_backward(
            b, d_x, saved[i], block_params(P, i, dims), dims,
            prefix=f"l{i}_", input_grad=True)
        grads.update({f"l{i}_{stem}": g for stem, g in block_grads.items()})
    b.explain = True
    b.blank()
    b.comment("Embeddings: d_wpe = sum of d_x0 over the batch; d_wte adds "
              "each token's d_x0 row")
    b.comment("into its row of a zero table (repeated tokens accumulate).")
    grads["wpe"] = b.reduce_sum("d_wpe", d_x, [0])
    zeros = b.constant("wte_zeros", 0.0, (vocab, H))
    grads["wte"] = b.scatter_add("d_wte", zeros, tokens, d_x)

    # ====================================================================
    # AdamW
    # ====================================================================
    new = tb.emit_adamw(b, param_specs, P, state, grads, lr)
    results = tb.step_results(param_specs, new, loss)
    b.blank()

    n_params = sum(math.prod(s) for _, _, s in param_specs)
    header = [
        f"// One training step of a GPT-like language model with {layers} "
        "pre-LN transformer blocks.",
        "//",
        "// GENERATED FILE, do not edit. Generated by:",
        f"//   {command}",
        "//",
        "// Model (PyTorch layout: linear weights are [out, in], used with "
        "transpose_rhs):",
        "//   x0   = wte[tokens] + wpe                            wte.weight, wpe.weight",
        "//   x_{i+1} = block_i(x_i), i < L, each block as in "
        "examples/transformer_block.mlir:",
        "//     h = x + attn(ln1(x)), out = h + fc2(gelu(fc1(ln2(h))))  "
        "blocks.i.{ln1,attn.{q,k,v,out},ln2,mlp.fc1,mlp.fc2}.*",
        "//   loss = cross_entropy(ln_f(x_L) @ lm_head^T, labels)   ln_f.*, lm_head.weight",
        "//          (mean over all B*S token labels)",
        "// gelu is the tanh approximation; LayerNorm epsilon is 1e-5. Followed "
        "by the full",
        "// backward pass (d wte is a scatter_add) and an AdamW update (lr a "
        "hyper argument,",
        "// betas (0.9, 0.999), eps 1e-8, weight_decay 0.01) of every "
        "parameter; each parameter",
        "// P has opt_state P.exp_avg, P.exp_avg_sq and P.step.",
        "//",
        "// Shapes:",
        f"//   layers L = {layers}, batch B = {B}, seq S = {S}, hidden H = {H}, "
        f"heads nh = {dims.NH},",
        f"//   head dim hd = {dims.HD}, ffn = {dims.FF}, vocab = {vocab}",
        f"//   tokens, labels: [{B}, {S}] i32 (input, label), "
        "lr: scalar f32 (hyper)",
        f"//   {len(param_specs)} parameter tensors, {n_params} parameters",
    ]
    return tb.format_step(header, arg_lines, b, results)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Generate a train-dialect training step (forward, "
                    "backward, AdamW) for a GPT-like model of L pre-LN "
                    "transformer blocks.")
    parser.add_argument("--layers", "-L", type=int, default=12,
                        help="number of transformer blocks L")
    parser.add_argument("--hidden", type=int, default=256, help="hidden size H")
    parser.add_argument("--heads", type=int, default=4,
                        help="number of attention heads (must divide H)")
    parser.add_argument("--seq", type=int, default=128, help="sequence length S")
    parser.add_argument("--batch", type=int, default=8, help="batch size B")
    parser.add_argument("--vocab", type=int, default=1024,
                        help="vocabulary size")
    parser.add_argument("--ffn", type=int,
                        help="MLP inner size (default 4 * hidden)")
    parser.add_argument("--output", "-o", metavar="PATH",
                        help="write here instead of stdout")
    args = parser.parse_args(argv)
    if args.ffn is None:
        args.ffn = 4 * args.hidden
    for field in ("layers", "hidden", "heads", "seq", "batch", "vocab", "ffn"):
        if getattr(args, field) <= 0:
            parser.error(f"--{field} must be positive")
    if args.hidden % args.heads:
        parser.error(f"--hidden ({args.hidden}) must be divisible by "
                     f"--heads ({args.heads})")

    command = ("python3 bench/gen_gpt.py"
               f" --layers {args.layers} --hidden {args.hidden}"
               f" --heads {args.heads} --seq {args.seq} --batch {args.batch}"
               f" --vocab {args.vocab} --ffn {args.ffn}")
    dims = tb.BlockDims(args.batch, args.seq, args.hidden, args.heads,
                        args.ffn)
    text = generate(args.layers, dims, args.vocab, command)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
