// TEMPORARY stand-in until the report branch merges (its SwarmHTMLReport replaces this file).
public enum SwarmHTMLReport {
    public static func html(_ report: SwarmReport) -> String {
        "<!doctype html><title>swarm</title>"
    }
}
