"""The layer picture of docs/architecture.md (docs/layers.svg and the generated section) is what
the imports make now (tools/draw_layers.py), and its layers mean what the page says."""

from tools.draw_layers import BEGIN, END, main, part_layers, stale, svg, text_section
from tools.import_graph import PACKAGES, edges, package_pairs


def test_the_picture_and_the_section_are_current(capsys):
    assert main(["--check"]) == 0, capsys.readouterr().err


def test_a_stale_section_or_picture_is_caught(tmp_path):
    doc, picture = tmp_path / "architecture.md", tmp_path / "layers.svg"
    doc.write_text(f"# title\n\n{text_section()}\n\nmore\n", encoding="utf-8")
    picture.write_text(svg(), encoding="utf-8")
    assert stale(doc, picture) == []
    doc.write_text(f"# title\n\n{BEGIN}\nold layers\n{END}\n\nmore\n", encoding="utf-8")
    picture.write_text(svg().replace("layer 0", "layer 1", 1), encoding="utf-8")
    assert stale(doc, picture) == [str(doc), str(picture)]


def test_every_import_between_nodes_points_to_a_lower_layer_or_along_a_tolerated_cycle():
    layer = {n.name: n for part in PACKAGES for n in part_layers(part)}
    upward = [f"{where[0].source}:{where[0].line} ({a} layer {layer[a].layer} -> {b} layer {layer[b].layer})"
              for (a, b), where in package_pairs(edges()).items() if a in layer and b in layer
              and a.split(".")[0] == b.split(".")[0]
              and not (layer[a].layer > layer[b].layer or (layer[a].in_cycle and layer[a].layer == layer[b].layer))]
    assert upward == []
    assert max(n.layer for n in layer.values()) >= 5   # a real stack, not everything on one row
