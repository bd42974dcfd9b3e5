"""Pool requests as decisions: what a request, resize or removal becomes (`request`) and, when
refused, the variants that would pass every rule (`options`). No I/O: `fleet.stack.edit`
writes the result."""
