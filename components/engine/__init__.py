"""What runs the components: the offline plan (Pulumi's own engine under its mocks), the plan
diff and its replacement table, and the deploy (the Automation API). The rest of `components`
is ComponentResources only."""
