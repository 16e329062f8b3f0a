"""The handwritten digits data and model shared by train.py and evaluate.py.

The data is scikit-learn's bundled copy of the UCI optical digits set
(1,797 8x8 images, no download). The split is fixed (random_state), so
training and evaluation see the same test images.
"""
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HIDDEN = 64
SPLIT_SEED = 0
MODEL_FILE = "model.pt"


def load_split():
    """(x_train, y_train, x_test, y_test) as tensors, pixels scaled to [0, 1]."""
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, random_state=SPLIT_SEED, stratify=y)
    return x_train, y_train, x_test, y_test


def make_model(hidden=HIDDEN):
    return torch.nn.Sequential(
        torch.nn.Linear(64, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, 10),
    )


@torch.no_grad()
def accuracy(model, x, y):
    model.eval()
    return (model(x).argmax(dim=1) == y).float().mean().item()
