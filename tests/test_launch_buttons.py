"""Launch buttons that can work (book/_ext/launch.py), without building the site: which services keep their button
for which of the three addresses of _config.yml, what the build says, and the download attribute.

The built site itself (no launch button at a placeholder address, downloads that download): test_offline_site.py."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

import launch
from course import ROOT

SERVICES = {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"}


def _config(baseurl="", repository="", hub=""):
    return SimpleNamespace(html_baseurl=baseurl, html_theme_options={
        "repository_url": repository, "launch_buttons": {"notebook_interface": "jupyterlab", **SERVICES,
                                                         "jupyterhub_url": hub}})


SITE, REPO, HUB = "https://course.example/", "https://github.com/someone/agentrl-cloze", "https://hub.school.example"


@pytest.mark.parametrize("baseurl, repository, hub, kept", [
    ("", "", "", set()),
    (SITE, "", HUB, set()),                                        # no repository: nothing to fetch the notebook from
    ("", REPO, HUB, {"binderhub_url"}),                            # no site: Colab's setup cell could not install
    (SITE, REPO, "", {"binderhub_url", "colab_url"}),
    (SITE, REPO, HUB, {"binderhub_url", "colab_url", "jupyterhub_url"}),
])
def test_a_launch_button_needs_every_address_it_uses(baseurl, repository, hub, kept):
    launch_buttons = launch.working_launch_buttons(_config(baseurl, repository, hub))
    assert {key for key in launch.NEEDS if launch_buttons.get(key)} == kept
    assert launch_buttons["notebook_interface"] == "jupyterlab"


def test_the_build_says_which_address_to_set():
    said = launch.notice(_config("", REPO, ""))
    assert "html.baseurl" in said and "launch_buttons.jupyterhub_url" in said and "repository.url" not in said
    assert "colab" in said and "jupyterhub" in said and "binderhub" not in said
    assert launch.notice(_config(SITE, REPO, HUB)) == ""


def test_as_shipped_the_three_addresses_are_unset_and_no_service_keeps_its_button():
    """Nobody can check an address for a copy that does not exist yet: _config.yml ships them empty."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["html"]["baseurl"] == "" and config["repository"]["url"] == ""
    assert config["launch_buttons"]["jupyterhub_url"] == ""
    shipped = _config(config["html"]["baseurl"], config["repository"]["url"],
                      config["launch_buttons"]["jupyterhub_url"])
    assert not any(launch.working_launch_buttons(shipped).get(key) for key in launch.NEEDS)


PAGE = """<li><a href="../notebooks/ex1.ipynb" target="_blank"
   class="btn btn-sm btn-download-student-notebook-button dropdown-item"
   title="x">x</a></li>
<li><a href="../_sources/book/ex1.ipynb" target="_blank"
   class="btn btn-sm btn-download-source-button dropdown-item">x</a></li>
<li><button onclick="window.print()" class="btn btn-sm btn-download-pdf-button dropdown-item">x</button></li>
<a class="reference external" href="https://example.org/x.ipynb">other link</a>"""


def test_notebook_links_of_the_header_get_the_download_attribute_once():
    marked = launch._with_download(PAGE)
    assert marked.count("<a download ") == 2
    assert '<a class="reference external" href="https://example.org/x.ipynb">' in marked  # body links untouched
    assert launch._with_download(marked) == marked
