"""A site's configuration read without MkDocs — mkdocs.yml's docs_dir, site_dir, nav and the
perfpages plugin's options — and the configuration the render step writes beside the rendered
pages, for a generator that runs no perfpages plugin (Zensical, or MkDocs without it).

mkdocs.yml may carry tags (`!ENV`, `!!python/name:…`): they are kept as written, so the written
configuration means to its generator what the original meant.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from perfpages import settings as project
from perfpages.errors import PerfpagesError

PLUGIN = "perfpages"
CSS = "assets/perfpages.css"  # the charts' and tables' stylesheet (the plugin's too)
RENDERED = "rendered"  # where `perfpages render` writes, beside mkdocs.yml (the pytest plugin's)


@dataclass(frozen=True)
class Tagged:
    """A tagged YAML node, kept to be written back as it was."""

    tag: str
    value: Any
    kind: type[yaml.Node]


class _Loader(yaml.SafeLoader):
    pass


class _Dumper(yaml.SafeDumper):
    pass


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Tagged:
    if isinstance(node, yaml.MappingNode):
        value: Any = loader.construct_mapping(node, deep=True)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_scalar(node)  # type: ignore[arg-type]
    return Tagged(node.tag, value, type(node))


def _represent(dumper: yaml.SafeDumper, data: Tagged) -> yaml.Node:
    if data.kind is yaml.MappingNode:
        return dumper.represent_mapping(data.tag, data.value)
    if data.kind is yaml.SequenceNode:
        return dumper.represent_sequence(data.tag, data.value)
    return dumper.represent_scalar(data.tag, data.value)


_Loader.add_multi_constructor("!", _tagged)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", _tagged)
_Dumper.add_representer(Tagged, _represent)


def read(mkdocs_yml: Path) -> dict[str, Any]:
    """mkdocs.yml as data (tags kept); a file that is missing or not YAML is one line."""
    try:
        config = yaml.load(project.regular_text(mkdocs_yml), Loader=_Loader) or {}
    except (OSError, UnicodeDecodeError) as exc:
        raise PerfpagesError(f"cannot read it: {exc}", where=mkdocs_yml,
                             fix="run this in the site's repository, or set "
                                 "[tool.perfpages] mkdocs") from None
    except yaml.YAMLError as exc:
        raise PerfpagesError(f"not valid YAML: {getattr(exc, 'problem', exc)}",
                             where=mkdocs_yml, fix="fix the YAML") from None
    if not isinstance(config, dict):
        raise PerfpagesError("not a mapping of settings", where=mkdocs_yml,
                             fix="write mkdocs.yml as `key: value` lines")
    return config


def _entries(config: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    plugins = config.get("plugins") or []
    if isinstance(plugins, dict):
        return list(plugins.items())
    if not isinstance(plugins, list):
        return []
    return [next(iter(p.items())) if isinstance(p, dict) and p else (p, None) for p in plugins]


def plugin_options(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The perfpages plugin's options in mkdocs.yml's plugins (a list, or a mapping); None when
    the site does not use it."""
    for name, options in _entries(config):
        if name == PLUGIN:
            return dict(options) if isinstance(options, dict) else {}
    return None


def without_plugin(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration with the perfpages plugin left out (its work is done)."""
    out = dict(config)
    plugins = config.get("plugins")
    if isinstance(plugins, dict):
        out["plugins"] = {k: v for k, v in plugins.items() if k != PLUGIN}
    elif isinstance(plugins, list):
        out["plugins"] = [p for p in plugins if p != PLUGIN and not (
            isinstance(p, dict) and PLUGIN in p)]
    return out


@dataclass(frozen=True)
class Site:
    """What the build of a perfpages site reads, as the MkDocs plugin reads it."""

    mkdocs: Path
    base: Path  # mkdocs.yml's directory: pages are named relative to it
    docs: Path
    results: Path
    run_pages: bool
    cache: Path | None
    site_url: str
    config: dict[str, Any]

    @classmethod
    def load(cls, mkdocs_yml: Path | None = None, docs: str | Path | None = None) -> Site:
        """The site of the repository here ([tool.perfpages] mkdocs), or of `mkdocs_yml`;
        `docs` overrides its docs_dir (relative to the working directory)."""
        path = (mkdocs_yml or project.load().mkdocs).resolve()
        config = read(path)
        base = path.parent
        s = project.load(base)  # as the plugin reads it, from mkdocs.yml's directory
        options = plugin_options(config)
        if options is None:
            raise PerfpagesError("the site does not use the perfpages plugin", where=path,
                                 key="plugins", fix="add `- perfpages` under plugins")
        results = options.get("results")
        docs_dir = config.get("docs_dir")
        docs_dir = "docs" if docs_dir is None else docs_dir
        for key, value in (("plugins.perfpages.results", results), ("docs_dir", docs_dir)):
            if value is not None and not (isinstance(value, str) and value.strip()):
                raise PerfpagesError(f"{value!r} is not a directory's path", where=path, key=key,
                                     fix="give a path relative to mkdocs.yml, e.g. docs")
        url = config.get("site_url")
        url = url if isinstance(url, str) else ""
        if url and not url.endswith("/"):
            url += "/"  # as MkDocs reads it (a directory)
        return cls(mkdocs=path, base=base,
                   docs=Path(docs).resolve() if docs is not None else base / docs_dir,
                   results=(base / results).resolve() if isinstance(results, str)
                   else s.results,
                   run_pages=options.get("run_pages", True) is not False,
                   cache=base / ".cache" / "perfpages" if options.get("cache", True)
                   is not False else None,
                   site_url=url, config=config)

    def shown(self, file: Path) -> str:
        """A page's path as the build names it: relative to mkdocs.yml's directory."""
        return Path(os.path.relpath(file, self.base)).as_posix()


def rendered(site: Site, out: Path) -> str:
    """The configuration of the rendered pages in `out`: the site's own, with its pages in
    `out/docs`, its build in `out/site` (Zensical builds only inside the configuration's
    directory), paths of theme overrides made absolute, the perfpages plugin left out and its
    stylesheet listed."""
    config = without_plugin(site.config)
    config["docs_dir"] = "docs"
    config["site_dir"] = "site"
    config.pop("INHERIT", None)
    theme = config.get("theme")
    if isinstance(theme, dict) and isinstance(theme.get("custom_dir"), str):
        config["theme"] = {**theme, "custom_dir": str((site.base / theme["custom_dir"]).resolve())}
    css = config.get("extra_css")
    css = list(css) if isinstance(css, list) else []
    if CSS not in css:
        css.append(CSS)
    config["extra_css"] = css
    head = (f"# Written by `perfpages render` from {site.mkdocs.name}: every page's macros are "
            f"computed and its claims checked.\n# Build it with any generator, e.g. `zensical "
            f"build -f {out.name}/mkdocs.yml`; edit {site.mkdocs.name}, not this file.\n")
    text: str = yaml.dump(config, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    return head + text
