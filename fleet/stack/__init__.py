"""The stack file: reading it (`read`, bounded and typed), choosing which one a command works
on (`choice`, `pulumi_workspace`), editing it byte for byte (`edit`) and committing an edit for
review (`git`)."""
