"""W&B that cannot start (online without a key, a bad key) says so in one line, with the fix;
no test here reaches the network (wandb.init is replaced by what it raises)."""

from __future__ import annotations

import pytest
import wandb

from drl_ac.tracking import TrackingError, WandbLogger

FIX = ("Fix: log in (`wandb login`, or set WANDB_API_KEY), or run offline (WANDB_MODE=offline; upload later "
       "with `wandb sync`).")


@pytest.mark.parametrize(("env", "raised", "said"), [
    # wandb 0.31 without a key and without a terminal to prompt on (wbauth.authenticate_session)
    ({"WANDB_MODE": "online"}, wandb.errors.UsageError("No API key configured. Use `wandb login` to log in."),
     "W&B cannot start in online mode: No API key configured. Use `wandb login` to log in. "),
    # a key that is no key (wbauth._try_env_auth): online chosen because credentials seem present
    ({"WANDB_API_KEY": "abc"}, wandb.errors.AuthenticationError("WANDB_API_KEY invalid: API key must have 40+ "
                                                                "characters, has 3."),
     "W&B cannot start in online mode: WANDB_API_KEY invalid: API key must have 40+ characters, has 3. "),
])
def test_wandb_that_cannot_start_says_how_to_log_in_or_go_offline(monkeypatch, tmp_path, env, raised, said):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    modes = []

    def init(**kwargs):
        modes.append(kwargs["mode"])
        raise raised

    monkeypatch.setattr(wandb, "init", init)
    with pytest.raises(TrackingError) as caught:
        WandbLogger(True, {"scenario": "mm1"}, directory=tmp_path)
    assert modes == ["online"]
    assert str(caught.value) == said + FIX
    assert isinstance(caught.value, ValueError)  # command lines print it as a usage error, without a traceback
    assert caught.value.__suppress_context__
