"""Real local servers that stand in for remote services in tests."""
