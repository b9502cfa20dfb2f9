/**
 * The FileSystem conformance suite against the real file system (Node's, in a
 * scoped temporary directory) and against MemoryHost: both must pass the same
 * tests, which is what lets tests of node agents run on the simulated host.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { MemoryHost } from "@hostnode/test"
import { FileSystemConformance } from "@hostnode/test/conformance"

FileSystemConformance.suite("NodeFileSystem (real, in a temporary directory)", NodeFileSystem.layer)

FileSystemConformance.suite("MemoryHost", MemoryHost.layer())
