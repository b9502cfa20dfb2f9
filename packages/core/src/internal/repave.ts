/**
 * Which files of the kubelet's pki directory `Repave.resetKubeletIdentity` removes.
 */

/**
 * True for the kubelet's client credentials in its pki directory, as
 * client-go's certificate store names them: the rotated pairs
 * `kubelet-client-<date>.pem`, the `kubelet-client-current.pem` link (and
 * `kubelet-client-updated.pem`, its leftover from an interrupted rotation), and
 * the key `kubelet-client.key.tmp` a bootstrap leaves while its request is
 * pending. The serving certificates (`kubelet.crt`, `kubelet.key`,
 * `kubelet-server-*`) and the CA are not client credentials.
 */
export const isClientCredential = (name: string): boolean =>
  name === "kubelet-client.key.tmp" ||
  (name.startsWith("kubelet-client-") && name.endsWith(".pem") && name.length > "kubelet-client-.pem".length)
