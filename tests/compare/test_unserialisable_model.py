"""A model protobuf refuses to serialise (over 2 GiB) is a refusal naming the cause, on both ways a model
reaches the onnxruntime worker: its own session and the host's base model."""

import pytest

from sonnx_check.compare.runtimes.worker import host as runtime
from sonnx_check.compare.runtimes.worker.host import RuntimeRefusal


class _TooLarge:
    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's name
        raise ValueError("Message onnx.ModelProto exceeds maximum protobuf size of 2GB: 2147483699")


def test_a_session_on_an_unserialisable_model_is_refused():
    with pytest.raises(RuntimeRefusal) as caught:
        runtime.HeldSession(_TooLarge())  # type: ignore[arg-type]
    assert "cannot be serialised for onnxruntime" in str(caught.value)
    assert "exceeds maximum protobuf size" in str(caught.value)


def test_an_unserialisable_base_model_is_refused():
    host = runtime.SessionHost()
    host.set_base(_TooLarge())  # type: ignore[arg-type]
    with pytest.raises(RuntimeRefusal) as caught:
        host.base_to_send()
    assert "cannot be serialised for onnxruntime" in str(caught.value)
