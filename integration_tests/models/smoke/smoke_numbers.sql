-- Smallest possible model: proves the harness, both targets and the package install.
select
    id,
    id % 7 as id_mod_7,
    cast(id * 1.5 as double) as amount
from range(0, 100)
