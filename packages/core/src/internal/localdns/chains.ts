/**
 * The chains and protocols of our rules.
 *
 * @since 0.4.0
 */

/** The chains the rules go in: locally generated traffic and traffic arriving from pods. */
export const Chains = ["OUTPUT", "PREROUTING"] as const

/** DNS runs over both. */
export const Protocols = ["tcp", "udp"] as const
