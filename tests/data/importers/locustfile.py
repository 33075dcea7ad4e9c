from locust import HttpUser, task


class Reader(HttpUser):
    @task
    def one_kb(self) -> None:
        self.client.get("/1k.bin")
