//! Question answering: `/v1/ask` with the learned and LLM planners, the
//! LLM privacy policy, multi-strategy retrieval, the answer reranker, and a
//! real llama.cpp server.

mod ask;
mod llm_server;
mod rerank;
mod strategies;
