"""Infrastructure only: one stack (`EpisodicStack`) composing one construct per concern."""
