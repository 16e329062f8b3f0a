#!/usr/bin/python3
"""Evaluate a model saved by train.py on the digits test split.

Prints "accuracy=0.9xxx"; exits 1 when the accuracy is below --min-accuracy,
so scripts can gate on it.
"""
import argparse
import os
import sys

import torch

from digits import MODEL_FILE, accuracy, load_split


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model_dir", nargs="?", default=os.environ.get("OUTPUT_DIR"),
                   help="the directory train.py saved into (default $OUTPUT_DIR)")
    p.add_argument("--min-accuracy", type=float, default=0.0)
    args = p.parse_args()
    if not args.model_dir:
        p.error("give the model directory (or set OUTPUT_DIR)")
    model = torch.jit.load(os.path.join(args.model_dir, MODEL_FILE))
    _, _, x_test, y_test = load_split()
    acc = accuracy(model, x_test, y_test)
    print(f"test_images={len(y_test)} accuracy={acc:.4f}")
    return 0 if acc >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
