"""Gradual unfreezing, written as fine-tuning code often is: the head trains from the start under
AdamW, and at step 4 a method of the trainer unfreezes the encoder and hands its parameters to the
optimizer as a new param group. Step 4 trains more parameters (a switch with a line to cite); AdamW
makes their moments on that step, read from step 5 on: the new group's warm-up, expected."""

import torch
import torch_xla


class FineTuner:
    def __init__(self, encoder, head):
        self.encoder, self.head = encoder, head
        self.encoder.requires_grad_(False)
        self.optimizer = torch.optim.AdamW(head.parameters(), lr=1e-3)

    def unfreeze_encoder(self):
        self.encoder.requires_grad_(True)  # SWITCH
        self.optimizer.add_param_group({"params": list(self.encoder.parameters()), "lr": 1e-4})  # GROUP

    def step(self, x, y):
        logits = self.head(self.encoder(x))
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss


torch.manual_seed(0)
dev = torch_xla.device()
encoder = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16)).to(dev)
tuner = FineTuner(encoder, torch.nn.Linear(16, 3).to(dev))
data, labels = torch.randn(8, 6, 12), torch.randint(0, 3, (8, 6))
for step in range(8):
    if step == 4:  # WHEN
        tuner.unfreeze_encoder()
    tuner.step(data[step].to(dev), labels[step].to(dev))
    torch_xla.sync()
print("done")
