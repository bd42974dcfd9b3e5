"""The stack's `accelfleet:fleet` section as typed fields (`fields`, pydantic) and its type
errors in the README's words (`errors`)."""
