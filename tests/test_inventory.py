"""Where users keep their fleets: Slurm/pdsh hostlists and Ansible inventories (INI and YAML).
Expectations follow the formats' own documentation: Ansible's "How to build your inventory"
(INI `[group]`, `[group:children]`, `[group:vars]`, `gpu[01:04]` inclusive ranges with leading
zeros, `ansible_host`/`ansible_user`/`ansible_port`) and Slurm's hostlist syntax (`gpu[01-03]`)."""

from __future__ import annotations

import pytest

from remotedbg.errors import UsageError
from remotedbg.inventory import expand, hosts_from_file, is_host_list

INI = """\
# the GPU boxes
bastion ansible_host=127.0.0.1 ansible_port=2200

[gpus]
gpu[01:03]
gpu-special ansible_user=ml ansible_port=2222   ; the odd one

[gpus:vars]
ansible_user=ops

[ib]
node[1:2]-ib

[training:children]
gpus
ib
"""

YAML = """\
all:
  hosts:
    bastion:
      ansible_host: 127.0.0.1
  children:
    gpus:
      vars:
        ansible_user: ops
      hosts:
        gpu[01:02]:
        gpu-special:
          ansible_port: 2222
    ib:
      hosts:
        node1-ib:
"""


def test_hostlists_expand_as_slurm_does():
    assert expand("gpu[01-03],box") == ["gpu01", "gpu02", "gpu03", "box"]
    assert expand("node[1,5-6]-ib") == ["node1-ib", "node5-ib", "node6-ib"]
    assert is_host_list("gpu[01-16]") and is_host_list("a,b")
    assert not is_host_list("[::1]:2222") and not is_host_list("user@gpu-box")
    with pytest.raises(UsageError, match="host list 'gpu\\[1-'"):
        expand("gpu[1-")


def test_ansible_ini_groups_children_and_variables():
    everything = hosts_from_file(INI)
    assert everything[0] == "127.0.0.1:2200"  # ansible_host and ansible_port
    assert "ops@gpu01" in everything and "ml@gpu-special:2222" in everything
    assert hosts_from_file(INI, "ib") == ["node1-ib", "node2-ib"]
    training = hosts_from_file(INI, "training")
    assert training == [
        "ops@gpu01",
        "ops@gpu02",
        "ops@gpu03",
        "ml@gpu-special:2222",
        "node1-ib",
        "node2-ib",
    ]
    with pytest.raises(UsageError, match="no group 'cpu'"):
        hosts_from_file(INI, "cpu")


def test_ansible_yaml_groups_children_and_variables():
    assert hosts_from_file(YAML, "gpus") == ["ops@gpu01", "ops@gpu02", "ops@gpu-special:2222"]
    assert hosts_from_file(YAML)[0] == "127.0.0.1"
    assert set(hosts_from_file(YAML)) == {
        "127.0.0.1",
        "ops@gpu01",
        "ops@gpu02",
        "ops@gpu-special:2222",
        "node1-ib",
    }


def test_plain_lists_keep_working_and_take_hostlists():
    assert hosts_from_file("# mine\ngpu-box\ngpu[01-02]  # two more\n\n") == [
        "gpu-box",
        "gpu01",
        "gpu02",
    ]
    with pytest.raises(UsageError, match="plain list"):
        hosts_from_file("gpu-box\n", "gpus")
