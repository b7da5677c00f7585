"""Topologies are what their papers say; routes are shortest paths; ECMP hashes, spraying splits evenly."""
import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
import pytest

from netlab.figures.topology import draw
from netlab.net import fabrics
from netlab.net.routing import flow_hash, route
from netlab.net.topology import Host


def fabric_graph(topo):
    """The graph routing may use: every link but the intra-host ones (those carry same-host traffic only)."""
    return nx.DiGraph((u, v) for u, v, d in topo.graph.edges(data=True) if d["kind"] != "intra")


@pytest.mark.parametrize("k", [4, 8, 16])
def test_fat_tree_has_al_fares_counts(k):
    t = fabrics.fat_tree(k)
    kinds = [d["kind"] for _, d in t.graph.nodes(data=True)]
    assert t.size == k ** 3 // 4                                     # hosts
    assert kinds.count("switch") == 5 * k * k // 4                   # k^2 pod switches + (k/2)^2 core
    assert t.links == 2 * (k ** 3 // 4) * 3                          # host, edge-agg, agg-core layers, both ways
    assert np.all(t.capacity == t.capacity[0])                       # every link the same speed


def test_fat_tree_has_k_squared_over_4_shortest_paths_between_pods():
    t = fabrics.fat_tree(4)
    g = fabric_graph(t)
    a, b = t.endpoints[0], t.endpoints[-1]                           # different pods
    assert len(list(nx.all_shortest_paths(g, a, b))) == (4 // 2) ** 2


@pytest.mark.parametrize("ratio", [1, 2, 4])
def test_spine_leaf_uplinks_give_the_oversubscription_ratio(ratio):
    t = fabrics.spine_leaf(leaves=4, spines=2, ratio=ratio, ports_per_leaf=8)
    leaf = t.labels.index("leaf0")
    down = t.capacity[(t.link_src == leaf) & (t.link_kind == 0)].sum()      # to hosts
    up = t.capacity[(t.link_src == leaf) & (t.link_kind == 1)].sum()        # to spines
    assert down / up == pytest.approx(ratio)


def test_rail_wiring_puts_nic_j_of_every_host_on_leaf_j_of_its_group():
    rail = fabrics.fat_tree(8, host=Host(4, nics=4, rail=True), hosts=8)
    tor = fabrics.fat_tree(8, host=Host(4, nics=4, rail=False), hosts=8)
    def leaves_of(t, l):                                              # leaf of local rank l on each host
        return {t.labels[t.link_dst[e]] for e in np.flatnonzero(t.link_kind == 0)
                if t.labels[t.link_src[e]].endswith(f".g{l}") and t.labels[t.link_dst[e]].startswith("edge")}
    assert leaves_of(rail, 0) == {"edge0.0", "edge1.0"} and leaves_of(rail, 3) == {"edge0.3", "edge1.3"}
    assert leaves_of(tor, 0) == {f"edge{p}.{e}" for p in range(2) for e in range(4)}   # one host per ToR


def test_shared_nic_sits_between_its_accelerators_and_the_leaf():
    t = fabrics.star(2, host=Host(4, nics=2))
    r = route(t, [t.endpoints[1]], [t.endpoints[4]])                # h0.g1 -> h1.g0
    labels = [t.link_label(l) for l in r.path(0)]
    assert labels == ["h0.g1->h0.nic0", "h0.nic0->switch", "switch->h1.nic0", "h1.nic0->h1.g0"]
    assert t.kind_of(r.out_port[0]) == "nic" and t.kind_of(r.in_port[0]) == "nic"    # alpha paid at the NIC


def test_same_host_traffic_takes_the_intra_host_link():
    t = fabrics.fat_tree(4, host=Host(4, nics=4, rail=False), hosts=4)
    r = route(t, t.endpoints[[0, 1]], t.endpoints[[3, 5]])
    assert [t.kind_of(l) for l in r.path(0)] == ["intra", "intra"]
    assert "intra" not in [t.kind_of(l) for l in r.path(1)]


@pytest.mark.parametrize("make", [lambda: fabrics.fat_tree(4), lambda: fabrics.spine_leaf(3, 2, 2, 3),
                                  lambda: fabrics.torus(3, 4), lambda: fabrics.ring(7),
                                  lambda: fabrics.fat_tree(4, host=Host(2, nics=1), hosts=8)])
@pytest.mark.parametrize("mode", ["ecmp", "adaptive"])
def test_every_route_is_one_of_networkx_shortest_paths(make, mode):
    t = make()
    g = fabric_graph(t)
    rng = np.random.default_rng(1)
    src, dst = t.endpoints[rng.integers(0, t.size, 60)], t.endpoints[rng.integers(0, t.size, 60)]
    keep = t.host_of[np.searchsorted(t.endpoints, src)] != t.host_of[np.searchsorted(t.endpoints, dst)]
    src, dst = src[keep], dst[keep]
    r = route(t, src, dst, mode, seed=3)
    for f in range(src.size):
        links = r.path(f)
        nodes = [int(t.link_src[links[0]])] + [int(t.link_dst[l]) for l in links]
        assert nodes in list(nx.all_shortest_paths(g, int(src[f]), int(dst[f])))


def test_ecmp_is_a_deterministic_hash_that_the_seed_changes():
    t = fabrics.fat_tree(8)
    src, dst = t.endpoints[:64], t.endpoints[64:]
    a, b, c = route(t, src, dst, seed=1), route(t, src, dst, seed=1), route(t, src, dst, seed=2)
    assert np.array_equal(a.link, b.link)
    assert not np.array_equal(a.link, c.link)
    h = flow_hash(np.arange(10000), np.arange(10000) + 1, 7, np.zeros(10000, dtype=np.int64))
    counts = np.bincount((h % np.uint64(4)).astype(np.int64), minlength=4)
    assert counts.min() > 2300                                       # uniform over 4 uplinks


def test_ecmp_collides_where_spraying_splits_evenly():
    t = fabrics.fat_tree(4)
    src, dst = t.endpoints[:4], t.endpoints[[12, 13, 14, 15]]          # pod 0 -> pod 3, 4 flows
    sprayed = route(t, src, dst, "spray")
    for f in range(4):                                               # a flow's bytes leave and arrive whole
        mine = sprayed.flow == f
        first = t.link_src[sprayed.link[mine]] == src[f]
        last = t.link_dst[sprayed.link[mine]] == dst[f]
        assert sprayed.weight[mine][first].sum() == pytest.approx(1)
        assert sprayed.weight[mine][last].sum() == pytest.approx(1)
        cores = [t.labels[t.link_dst[l]] for l in sprayed.link[mine]]
        assert sum(c.startswith("core") for c in cores) == 4          # all (k/2)^2 core paths used
    core_load = np.bincount(sprayed.link, sprayed.weight, minlength=t.links)[t.link_kind == 1]
    assert core_load.max() == pytest.approx(1.0)                      # 4 flows over 4 uplinks of the pod


def test_placement_shuffles_whole_hosts():
    t = fabrics.fat_tree(4, host=Host(4, nics=4, rail=False), hosts=4)
    slots = t.placement(16, "shuffled", seed=3)
    assert sorted(slots) == list(range(16)) and not np.array_equal(slots, np.arange(16))
    hosts = t.host_of[slots].reshape(4, 4)
    assert (hosts == hosts[:, :1]).all()                              # ranks 4h..4h+3 share a host
    assert (slots.reshape(4, 4) % 4 == np.arange(4)).all()            # and keep their local index


@pytest.mark.parametrize("bad, message", [
    (lambda: fabrics.fat_tree(5), "k:"), (lambda: fabrics.spine_leaf(4, 2, 0, 4), "ratio:"),
    (lambda: fabrics.fat_tree(4, hosts=17), "hosts:"), (lambda: Host(8, nics=3), "nics:"),
    (lambda: fabrics.parse("fattree:x"), "topology:"), (lambda: fabrics.parse("mesh"), "topology:"),
    (lambda: fabrics.fat_tree(4).placement(17), "ranks:"),
    (lambda: fabrics.fat_tree(4).placement(4, "random"), "placement:"),
    (lambda: fabrics.fat_tree(4).placement(3, [0, 0, 1]), "placement:"),
    (lambda: route(fabrics.fat_tree(4), [16], [17], "hash"), "routing:"),
])
def test_bad_input_names_the_parameter(bad, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        bad()


def test_parse_sizes_the_fabric_for_the_ranks():
    assert fabrics.parse("fattree:16").size == 1024
    t = fabrics.parse("spineleaf:8:4:2", ranks=128)
    assert t.size == 128 and t.name == "spineleaf:8:4:2"
    assert fabrics.parse("torus", ranks=12).name == "torus:3x4"
    assert fabrics.parse("star", ranks=32, host=Host(8)).size == 32


@pytest.mark.parametrize("make", [lambda: fabrics.fat_tree(4, host=Host(2, nics=2)), lambda: fabrics.torus(4, 4),
                                  lambda: fabrics.fat_tree(16)])
def test_drawing_colours_links_by_load_and_marks_the_bottleneck(make):
    t = make()
    load = np.linspace(0, 1, t.links)
    fig = draw(t, load, highlight=t.links - 1)
    assert "bottleneck" in " ".join(x.get_text() for x in fig.axes[0].texts)
    assert len(fig.axes) == 2                                         # the drawing and its colour bar
    plt.close(fig)


@pytest.mark.parametrize("host, hosts", [(Host(2, nics=2), 64), (Host(8, nics=8, rail=True), 32), (Host(), 100),
                                         (Host(), None)])
def test_a_fat_tree_draws_each_host_under_its_edge_switches_and_leaves_out_idle_pods(host, hosts):
    """With fewer hosts than ports, the hosts fill the first pods: the drawing puts each host under the
    edge switches it plugs into (within one edge's spacing), and only switches that no host reaches
    (whole idle pods, read from the wiring itself) are marked empty."""
    k = 16
    topo = fabrics.fat_tree(k, host=host, hosts=hosts)
    g = topo.graph
    label = nx.get_node_attributes(g, "label")
    pos = nx.get_node_attributes(g, "pos")
    edges = {v for v in g if label[v].startswith("edge")}
    spacing = min(abs(pos[a][0] - pos[b][0]) for a in edges for b in edges
                  if a != b and not g.nodes[a]["empty"] and not g.nodes[b]["empty"])
    ups, xs = {}, {}                                  # per server: the edges it plugs into, where it is drawn
    for v in g:
        if g.nodes[v]["kind"] != "switch":
            h = g.nodes[v]["host"]
            ups.setdefault(h, set()).update(u for u in g.successors(v) if u in edges)
            xs.setdefault(h, []).append(pos[v][0])
    for h, up in ups.items():
        ex = [pos[u][0] for u in up]
        assert min(ex) - spacing <= min(xs[h]) and max(xs[h]) <= max(ex) + spacing, (h, xs[h], ex)
    host_edges = {u for v in g if g.nodes[v]["kind"] != "switch" for u in g.successors(v) if u in edges}
    pods_used = {label[e].split(".")[0][4:] for e in host_edges}
    for v in g:
        if g.nodes[v]["kind"] == "switch" and not label[v].startswith("core"):
            assert g.nodes[v]["empty"] == (label[v].split(".")[0].lstrip("edgag") not in pods_used), label[v]
