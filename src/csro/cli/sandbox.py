"""``csro sandbox check``: the kernel layers this machine gives every untrusted program."""

import json
import sys

import typer

from csro.cli._app import app
from csro.policies import check_layers, explain_layers

sandbox_app = typer.Typer(help="The sandbox under every untrusted program.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")


@sandbox_app.command("check")
def check_cmd(json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout.")) -> None:
    """Start a probe worker and print the layers it ran under. Exit 1 when a layer is
    missing: untrusted code then does not run unless the user allows that layer by name."""
    layers = check_layers()
    if json_out:
        print(json.dumps(layers))
    else:
        print(explain_layers(layers))
    if layers["missing"]:
        sys.exit(1)
