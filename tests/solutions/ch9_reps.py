"""Reference solution of Exercise 9 (kept out of the package; CI proves it passes the check)."""


def reps(buffer, event, entropy, size=8):
    if event == "send":
        if buffer:
            return buffer[0], list(buffer[1:])
        return entropy, list(buffer)
    if event == "clean":
        return None, (list(buffer) + [entropy])[-size:]
    return None, list(buffer)
