"""OpenVINO as the runtime under test (``--runtime openvino``): the session its worker process runs
(session.py). It runs in the same worker as onnxruntime (../worker/process.py), started for it."""
