"""Template authoring: render a chat template as transformers does (`rendering`), check that a response
template parses back what it writes (`check`), and infer a response template where none exists (`infer`).

Needs the `authoring` extra (jinja2 to render, the compiler to parse): `pip install '.[authoring]'` in respc's checkout.
"""

from respc.authoring.check import Finding, Report, check
from respc.authoring.infer import Inference, InferenceRefused, infer
from respc.authoring.probes import PROBES, Probe
from respc.authoring.rendering import ChatTemplate
from respc.authoring.sources import NoChatTemplate, load_chat_template, special_tokens

__all__ = [
    "PROBES",
    "ChatTemplate",
    "Finding",
    "Inference",
    "InferenceRefused",
    "NoChatTemplate",
    "Probe",
    "Report",
    "check",
    "infer",
    "load_chat_template",
    "special_tokens",
]
