"""Helpers: a benchmark from text, its plan, and work folders with logs written by the test."""

import os
import textwrap

import pytest

from caramel.stages.analyse import from_plan
from caramel.stages.expand.plan import make_plan
from caramel.stages.spec.loader import load_one


class Workspace:
    def __init__(self, root):
        self.root = root

    def bench(self, xml: str):
        path = os.path.join(self.root, "bench.xml")
        with open(path, "w") as handle:
            handle.write(textwrap.dedent(xml).strip() + "\n")
        return load_one(path)

    def plan(self, xml: str):
        return make_plan(self.bench(xml), run_id=0)

    def write(self, plan, wp_id: int, name: str, text: str) -> str:
        wp = plan.workpackages[wp_id]
        work = os.path.join(plan.run_dir, wp.dirname, "work")
        os.makedirs(os.path.dirname(os.path.join(work, name)), exist_ok=True)
        path = os.path.join(work, name)
        with open(path, "w") as handle:
            handle.write(text)
        return path

    def start(self, plan, *ids):
        for wp_id in ids or range(len(plan.workpackages)):
            wp = plan.workpackages[wp_id]
            os.makedirs(os.path.join(plan.run_dir, wp.dirname, "work"), exist_ok=True)

    def input(self, plan, states=None, cache=False):
        cache_path = os.path.join(plan.run_dir, "analyse.db") if cache else None
        if cache:
            os.makedirs(plan.run_dir, exist_ok=True)
        return from_plan(plan, states, cache_path)


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return Workspace(str(tmp_path))
