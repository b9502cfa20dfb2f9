/**
 * Building the LocalDNS errors (defined in `LocalDnsError`) in the steps.
 *
 * @since 0.3.0
 */
import { type Failure, LocalDnsError } from "../../LocalDnsError.ts"

/** The error of a failed network step. */
export const networkError = (reason: Failure): LocalDnsError => new LocalDnsError({ reason })
