"""Everything is declared in pyproject.toml except one file: ``kspark-zipless.pth``.

A ``.pth`` runs only from the root of a directory on ``sys.path`` (site-packages), and
setuptools has no declarative way to put a file there: this ``build_py`` copies it to the
wheel's root, or for an editable install to the editable wheel's root. What it does is in
``src/_kspark_zipless.py``.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = Path(__file__).resolve().parent / "src" / "kspark-zipless.pth"


class BuildPyWithPth(build_py):
    def run(self) -> None:
        super().run()
        root = (self.get_finalized_command("install").install_lib if self.editable_mode
                else self.build_lib)
        self.copy_file(str(PTH), str(Path(root) / PTH.name))


setup(cmdclass={"build_py": BuildPyWithPth})
