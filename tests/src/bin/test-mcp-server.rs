//! The rmcp test MCP server as a process: `test-mcp-server` speaks MCP on stdio;
//! `test-mcp-server --http` serves Streamable HTTP on 127.0.0.1 (random port) at `/mcp` and
//! prints the URL on its first stdout line.

#[tokio::main]
async fn main() -> std::io::Result<()> {
    if std::env::args().any(|a| a == "--http") {
        let server = lmchatkit_tests::mcp_server::serve_http().await;
        println!("{}", server.url());
        std::future::pending::<()>().await;
        Ok(())
    } else {
        lmchatkit_tests::mcp_server::serve_stdio().await
    }
}
