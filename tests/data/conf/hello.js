function hello(r) {
    r.return(200, "hello\n");
}

export default { hello };
